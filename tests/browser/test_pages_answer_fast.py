"""Stories from issue 12, in real Chromium: a log-dir folder in, a timeline in time, phones and dark mode."""
import re
import zipfile

import pytest

import jobs.tasks
import jobs.uploads
from jobs.models import Incident
from tests.browser.conftest import log_in
from tests.fixtures.logtree import write_logdir
from tests.pages.factories import add_artifact, sample_diagnosis, two_rank_log

pytestmark = pytest.mark.browser


def _incident_from(page) -> Incident:
    page.wait_for_url(re.compile(r"/incidents/\d+/$"))
    return Incident.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def test_a_picked_log_dir_folder_keeps_its_ranks_and_routes_each_file(browser_page, alice, monkeypatch, tmp_path):
    page = browser_page
    monkeypatch.setattr(jobs.uploads, "_enqueue", lambda pk: None)
    root = write_logdir(tmp_path / "job", world=4, failing=3)
    log_in(page, "alice")
    page.goto("/incidents/new/")
    page.set_input_files("#folder-input", str(root))
    page.wait_for_selector("#upload-file-list li[data-path$='attempt_0/3/stderr.log'][data-sniffed]")

    def role(path_end):
        return page.locator(f"#upload-file-list li[data-path$='{path_end}'] select.file-role").input_value()

    # The input itself says "No file chosen"; the summary beside it says what was picked.
    assert page.locator("#file-summary").inner_text() == (
        "11 files chosen: 4 logs, 1 launch command, 1 config, 1 data sample, 4 ignored")
    assert role("command.txt") == "command"
    assert role("ds_zero2.json") == "config"
    assert role("data_sample.jsonl") == "data"
    assert role("attempt_0/3/stderr.log") == "log"
    empty = page.locator("#upload-file-list li[data-path$='attempt_0/0/stdout.log']")
    assert "empty: ignored" in empty.inner_text()  # said on the file itself; not fatal
    assert empty.locator("select.file-role").input_value() == "ignore"
    # The user corrects a role and removes a file before submitting.
    page.locator("#upload-file-list li[data-path$='attempt_0/2/stdout.log'] button.remove").click()
    assert page.locator("#upload-file-list li[data-path$='attempt_0/2/stdout.log']").count() == 0
    page.click("#upload-form [type=submit]")
    incident = _incident_from(page)

    names = sorted(a.original_name for a in incident.artifacts.filter(kind="log"))
    assert "job/run-logs/attempt_0/3/stderr.log" in names and len([n for n in names if n.endswith("stderr.log")]) == 4
    assert not [n for n in names if n.endswith("stdout.log")]
    assert incident.command.startswith("torchrun --nnodes 1 --nproc_per_node 4")
    assert incident.artifacts.filter(kind="config", original_name="ds_zero2.json").exists()
    assert incident.artifacts.filter(kind="data_sample", original_name="data_sample.jsonl").exists()

    jobs.tasks.diagnose_incident(incident.pk)  # the test plays the worker
    incident.refresh_from_db()
    assert incident.failing_rank == 3, incident.status_reason
    page.reload()
    headline = page.locator("#verdict .headline").inner_text()
    assert headline.startswith("Rank 3 ran out of GPU memory in the optimizer step; 3 ranks then timed out")
    assert page.locator("#top-fix pre.command").inner_text().strip()
    assert page.locator("#top-fix").bounding_box()["y"] < 900  # what to change: on the first screen
    assert page.js_errors == []


def test_a_stderr_with_nul_bytes_inside_a_zip_is_read_not_dropped(browser_page, alice, monkeypatch, tmp_path):
    """Needs the upload service to keep NUL bytes in mostly-text members (the robust branch's change)."""
    page = browser_page
    monkeypatch.setattr(jobs.uploads, "_enqueue", lambda pk: None)
    root = write_logdir(tmp_path / "job", world=4, failing=3, nul_in=3, extras=False)
    archive = tmp_path / "run-logs.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for path in sorted((root / "run-logs").rglob("stderr.log")):
            bundle.write(path, path.relative_to(root).as_posix())
    log_in(page, "alice")
    page.goto("/incidents/new/")
    page.set_input_files("#upload-form input[type=file][name=logs]", str(archive))
    page.wait_for_selector("#upload-file-list li[data-path='run-logs.zip']")
    page.click("#upload-form [type=submit]")
    incident = _incident_from(page)
    assert incident.artifacts.filter(original_name="run-logs/attempt_0/3/stderr.log").exists()
    jobs.tasks.diagnose_incident(incident.pk)
    page.reload()
    assert page.locator("#verdict .headline").inner_text().startswith("Rank 3 ran out of GPU memory")


def test_a_nul_byte_file_is_kept_with_a_note_and_an_empty_one_ignored(browser_page, alice, tmp_path):
    page = browser_page
    (tmp_path / "stderr.log").write_bytes(b"step 1 loss=2.0\n\x00\x00 torch.OutOfMemoryError: CUDA out of memory.\n")
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "weights.bin").write_bytes(bytes(range(32)) * 400)  # all control bytes
    log_in(page, "alice")
    page.goto("/incidents/new/")
    page.set_input_files("#upload-form input[type=file][name=logs]",
                         [str(tmp_path / name) for name in ("stderr.log", "stdout.log", "weights.bin")])
    page.wait_for_selector("#upload-file-list li[data-path='weights.bin'][data-sniffed]")
    page.wait_for_selector("#upload-file-list li[data-path='stderr.log'][data-sniffed]")
    assert "NUL bytes: kept" in page.locator("#upload-file-list li[data-path='stderr.log']").inner_text()
    assert "empty: ignored" in page.locator("#upload-file-list li[data-path='stdout.log']").inner_text()
    binary = page.locator("#upload-file-list li[data-path='weights.bin']")
    assert "binary" in binary.locator(".file-problem").inner_text()
    page.click("#upload-form [type=submit]")
    # Refused before sending, next to the button, naming the file.
    assert "weights.bin" in page.locator("#upload-message .field-error").inner_text()
    assert "/incidents/new/" in page.url


def test_the_timeline_is_in_seconds_with_the_first_failure_marked(browser_page, alice, alpha, make_incident):
    page = browser_page
    incident = make_incident(alpha, diagnosis=sample_diagnosis(256, memory_points=5))
    log_in(page, "alice")
    page.goto(f"/incidents/{incident.pk}/")
    page.wait_for_selector("#timeline-chart .scatterlayer .trace", state="attached")
    chart = page.locator("#timeline-chart")
    assert chart.get_attribute("data-x-mode") == "wall"
    title = page.evaluate("() => document.getElementById('timeline-chart').layout.xaxis.title.text")
    assert title.startswith("seconds since the job's first timestamp")
    notes = page.evaluate("() => document.getElementById('timeline-chart').layout.annotations.map(a => a.text)")
    assert any(note.startswith("First failure: rank 137") for note in notes)
    assert chart.locator(".annotation-text", has_text="First failure: rank 137").count() == 1
    legend = " ".join(page.evaluate("() => document.getElementById('timeline-chart').data.map(t => t.name)"))
    assert "First failure" in legend and "Last progress step" in legend
    # The cascade after the first failure is shaded: a layout shape starting at the failure's x.
    shapes = page.evaluate("() => document.getElementById('timeline-chart').layout.shapes")
    first_x = page.evaluate("() => document.getElementById('timeline-chart').data"
                            ".find(t => t.name === 'First failure').x[0]")
    assert any(s["type"] == "rect" and s.get("xref") == "x" and s["x0"] == first_x for s in shapes)
    assert first_x == pytest.approx(96.5, abs=0.01)  # seconds since the first timestamp (t=0.0)
    assert page.js_errors == []


def test_hover_text_from_a_log_is_never_markup(browser_page, alice, alpha, make_incident):
    page = browser_page
    diagnosis = sample_diagnosis(2)
    diagnosis["ranks"][1]["events"][2]["text"] = '<img src=x onerror="window.pwned=1">KeyError'
    incident = make_incident(alpha, diagnosis=diagnosis)
    log_in(page, "alice")
    page.goto(f"/incidents/{incident.pk}/")
    page.wait_for_selector("#timeline-chart .scatterlayer .trace", state="attached")
    page.locator("#timeline-chart .scatterlayer .trace .point").last.hover(force=True)
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.pwned") is None
    assert page.locator("#timeline-chart img").count() == 0


def _pages(incident, artifact):
    return ["/", "/incidents/new/", f"/incidents/{incident.pk}/", f"/incidents/{incident.pk}/artifacts/{artifact.pk}/?line=6",
            "/knowledge/", "/settings/api-keys/"]


def _overflow(page) -> int:
    return page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")


def _too_wide(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !e.closest('svg'))
        .sort((a, b) => b.getBoundingClientRect().right - a.getBoundingClientRect().right).slice(0, 4).map(e => e.tagName + ' in #' + (e.closest('[id]') || {}).id + ' right=' + Math.round(e.getBoundingClientRect().right))""")


def test_no_page_scrolls_sideways_on_a_phone(chromium_browser, live_server, alice, alpha, make_incident):
    diagnosis = sample_diagnosis(256, memory_points=5)
    diagnosis["fixes"][0]["title"] = "Set --per_device_train_batch_size_or_another_flag_with_a_very_long_name=4"
    diagnosis["fixes"][0]["kind"] = "enable_gradient_checkpointing_with_a_long_kind"
    incident = make_incident(alpha, diagnosis=diagnosis, title="x" * 120,
                             job_id="job-with-a-very-long-identifier-0123456789abcdef0123456789")
    artifact = add_artifact(incident, "log.txt", two_rank_log() + "[rank1]: " + "y" * 600 + "\n")
    from django.core.management import call_command

    call_command("create_api_key", alpha.name, name="slurm epilog on login-node-01.cluster.example.org")
    context = chromium_browser.new_context(viewport={"width": 390, "height": 844}, base_url=live_server.url)
    page = context.new_page()
    try:
        page.goto("/accounts/login/")
        assert _overflow(page) <= 0, "login"
        log_in(page, "alice")
        for url in _pages(incident, artifact):
            page.goto(url)
            if page.locator("#timeline-chart").count():
                page.wait_for_selector("#timeline-chart .scatterlayer .trace", state="attached")
            assert _overflow(page) <= 0, f"{url} is {_overflow(page)} px too wide at 390 px: {_too_wide(page)}"
    finally:
        context.close()


def test_dark_mode_follows_the_system_setting(chromium_browser, live_server, alice, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    colours = {}
    for scheme in ("light", "dark"):
        context = chromium_browser.new_context(viewport={"width": 1440, "height": 900}, base_url=live_server.url,
                                               color_scheme=scheme)
        page = context.new_page()
        try:
            log_in(page, "alice")
            page.goto(f"/incidents/{incident.pk}/")
            colours[scheme] = page.evaluate("""() => {
                const rgb = s => s.match(/\\d+/g).slice(0, 3).map(Number);
                const lum = c => (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]);
                const body = getComputedStyle(document.body), card = getComputedStyle(document.querySelector('.card'));
                return {bg: lum(rgb(body.backgroundColor)), fg: lum(rgb(body.color)), card: lum(rgb(card.backgroundColor))};
            }""")
            current = page.locator("nav a[aria-current=page]")
            assert current.count() == 1 and current.inner_text() == "Incidents"  # the menu marks where we are
        finally:
            context.close()
    assert colours["light"]["bg"] > 200 and colours["light"]["fg"] < 60
    assert colours["dark"]["bg"] < 40 and colours["dark"]["fg"] > 180 and colours["dark"]["card"] < 60


def test_a_queued_job_shows_its_wait_and_says_when_no_worker_took_it(browser_page, alice, alpha, make_incident):
    from datetime import timedelta

    from django.utils import timezone

    page = browser_page
    incident = make_incident(alpha)
    Incident.objects.filter(pk=incident.pk).update(created_at=timezone.now() - timedelta(seconds=75))
    fresh = make_incident(alpha)
    log_in(page, "alice")
    page.goto(f"/incidents/{incident.pk}/")
    page.wait_for_selector("#no-worker", state="visible")
    assert "No worker has picked this job up yet" in page.locator("#no-worker").inner_text()
    assert re.fullmatch(r"1:1\d", page.locator("#progress-elapsed").inner_text())
    page.goto(f"/incidents/{fresh.pk}/")
    page.wait_for_selector("#progress-elapsed")
    assert page.locator("#no-worker").is_hidden()  # a job queued a moment ago is not a worry yet


def test_clicking_the_first_failure_opens_the_log_at_its_line(browser_page, alice, alpha, make_incident):
    page = browser_page
    diagnosis = sample_diagnosis(2)
    error = next(e for e in diagnosis["ranks"][1]["events"] if e["kind"] == "error")
    error.update(source="log.txt", line=6, t=300.0)  # well apart from the other events: one point under the mouse
    diagnosis["root_cause"]["evidence"] = [{"source": "log.txt", "line": 6, "text": error["text"]}]
    incident = make_incident(alpha, diagnosis=diagnosis)
    add_artifact(incident, "log.txt", two_rank_log())
    log_in(page, "alice")
    page.goto(f"/incidents/{incident.pk}/")
    page.wait_for_selector("#timeline-chart .scatterlayer .trace", state="attached")
    page.locator("#timeline-chart").scroll_into_view_if_needed()
    marker = page.locator("#timeline-chart .scatterlayer .trace").last.locator(".point").first
    box = marker.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2 - 20, box["y"] + box["height"] / 2 + 10)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=5)
    page.wait_for_selector("#timeline-chart .hoverlayer .hovertext", state="attached")
    hover = page.locator("#timeline-chart .hoverlayer").text_content()
    assert "log.txt:6" in hover and "KeyError" in hover  # the log line, at its place
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url(re.compile(r"/artifacts/\d+/\?line=6#L6$"))
    assert "KeyError" in page.locator(".ln.hit, .hit").first.inner_text()
