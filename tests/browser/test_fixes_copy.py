"""Story: a tired engineer copies each fix from the page and pastes it; it must run as shown.

Two real diagnoses (the engine over a real CPU run's collective-timeout log): a two-node script with
`# node 0` / `# node 1` comments and no final newline, and a custom DDP loop whose timeout flag is its own
(--timeout_minutes). Every Copy button's clipboard text must parse as shell (bashlex), change both nodes
the same way, set each variable once, and keep to flags the script takes.
"""
from pathlib import Path

import bashlex
import pytest

from tests.browser.conftest import log_in
from triage.commandline import parse_script
from triage.commandline.check import env_set_twice
from triage.pipeline import diagnose

pytestmark = pytest.mark.browser
LOG = Path(__file__).resolve().parents[1] / "fixtures" / "cpu_runs" / "cpu-collective-timeout-tee" / "log.txt"
TWO_NODES = """# node 0
NCCL_DEBUG=WARN torchrun --nnodes 2 --node_rank 0 --nproc_per_node 2 --master_addr 10.1.0.5 --master_port 29511 \\
    train.py --per_device_train_batch_size 2 --ddp_timeout 10
# node 1
NCCL_DEBUG=WARN torchrun --nnodes 2 --node_rank 1 --nproc_per_node 2 --master_addr 10.1.0.5 --master_port 29511 \\
    train.py --per_device_train_batch_size 2 --ddp_timeout 10"""
CUSTOM_LOOP = "torchrun --nproc_per_node=3 --standalone ddp_loop.py --batch 2 --timeout_minutes 0.2"


def _copied_commands(page, incident_pk) -> list[str]:
    page.goto(f"/incidents/{incident_pk}/")
    buttons = page.locator("button.copy[data-copy-target$='-command']")
    assert buttons.count() >= 2
    texts = []
    for index in range(buttons.count()):
        buttons.nth(index).click()
        page.wait_for_function("b => b.textContent === 'Copied'", arg=buttons.nth(index).element_handle())
        texts.append(page.evaluate("navigator.clipboard.readText()"))
    return texts


def test_copying_each_fix_of_a_two_node_script_changes_both_nodes(browser_page, alice, alpha, make_incident):
    diagnosis = diagnose([LOG], command=TWO_NODES).to_dict()
    incident = make_incident(alpha, diagnosis=diagnosis, command=TWO_NODES, job_id="two-nodes")
    page = browser_page
    log_in(page, "alice")
    copied = _copied_commands(page, incident.pk)
    before = parse_script(TWO_NODES)
    for text in copied:
        bashlex.parse(text)  # raises on anything a shell would reject
        after = parse_script(text)
        assert [c.node for c in after.launches] == ["node 0", "node 1"]
        assert env_set_twice(after) == []
        old_nodes = [(c.env, {f.key: f.value for f in c.script_flags}) for c in before.launches]
        new_nodes = [(c.env, {f.key: f.value for f in c.script_flags}) for c in after.launches]
        changes = [(env_new != env_old, flags_new != flags_old)
                   for (env_old, flags_old), (env_new, flags_new) in zip(old_nodes, new_nodes, strict=True)]
        assert changes[0] == changes[1] and any(changes[0])  # both nodes changed, the same way
        assert new_nodes[0][0] == new_nodes[1][0]
        assert new_nodes[0][1]["per_device_train_batch_size"] == "2"
        assert [c.value("node_rank", where="launcher") for c in after.launches] == ["0", "1"]
    timeout = copied[0]
    assert [c.value("ddp_timeout") for c in parse_script(timeout).launches] == ["3600", "3600"]
    assert timeout.count("NCCL_DEBUG=") == 2 and "NCCL_DEBUG=WARN" not in timeout
    assert page.js_errors == []


def test_copying_the_timeout_fix_of_a_custom_loop_uses_its_own_flag(browser_page, alice, alpha, make_incident):
    diagnosis = diagnose([LOG], command=CUSTOM_LOOP).to_dict()
    incident = make_incident(alpha, diagnosis=diagnosis, command=CUSTOM_LOOP, job_id="custom-loop")
    page = browser_page
    log_in(page, "alice")
    copied = _copied_commands(page, incident.pk)
    for text in copied:
        bashlex.parse(text)
        assert "--ddp_timeout" not in text  # an HF Trainer flag this script would reject
        assert env_set_twice(parse_script(text)) == []
    cmd = parse_script(copied[0]).primary
    assert cmd.value("timeout_minutes") == "60"  # 12 s as the command set it -> 3600 s, in its own unit
    body = page.content()
    assert "12 s -&gt; 3600 s" in body or "12 s → 3600 s" in body or "12 s -> 3600 s" in body
    assert page.js_errors == []


def test_the_memory_curves_keep_their_axis_and_the_estimate_is_a_bar_chart(browser_page, alice, alpha, make_incident,
                                                                             screenshots):
    from tests.pages.factories import sample_diagnosis

    incident = make_incident(alpha, diagnosis=sample_diagnosis(256, memory_points=50), job_id="oom-256")
    page = browser_page
    log_in(page, "alice")
    page.goto(f"/incidents/{incident.pk}/")
    page.wait_for_selector("#memory-chart .main-svg")
    page.wait_for_selector("#memory-estimate-chart .main-svg")
    # the curves' y-axis ends near the 81,559 MiB capacity, not at an estimate line far above it
    top = page.evaluate("document.getElementById('memory-chart')._fullLayout.yaxis.range[1]")
    assert 76_000 < top < 90_000
    assert page.evaluate("document.getElementById('memory-chart')._fullLayout.xaxis.title.text") \
        == "seconds since the first reading"
    bars = page.evaluate("document.getElementById('memory-estimate-chart').data[0]")
    assert bars["type"] == "bar" and bars["y"][:2] == [83.8, 58.2]
    page.locator("#memory-h").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "incident-memory-charts.png"), full_page=True)
    assert page.js_errors == []
