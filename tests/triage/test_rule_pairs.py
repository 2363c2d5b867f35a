"""One matching excerpt and one near miss per rule, not per family (issue #14).

The excerpts live in fixtures/rules/per_rule.py. Every root rule must have a pair there, so a rule added
without fixtures fails this suite. Hint, confirmation and cascade rules never name a root cause on their
own terms; each role has its own small test of what it does.

Every root rule is covered by a single excerpt: no rule needed more context than its own lines.
"""

from __future__ import annotations

import importlib.util

import pytest
from triage_helpers import FIXTURES

from triage import diagnose
from triage.rules import CASCADE, CONFIRMATION, HINT, ROOT, all_rules


def _load_cases():
    spec = importlib.util.spec_from_file_location("per_rule_cases", FIXTURES / "rules" / "per_rule.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CASES = _load_cases()
CASES = _CASES.CASES
HINT_CASES = _CASES.HINT_CASES
RULES = {item.id: item for item in all_rules()}


def _ids(role: str) -> set[str]:
    return {item.id for item in RULES.values() if item.role == role}


def _diagnose(tmp_path, text: str, name: str = "train.log"):
    log = tmp_path / name
    log.write_text(text + "\n", encoding="utf-8")
    return diagnose([log])


# ---- coverage ---------------------------------------------------------------------------------------


def test_every_root_rule_has_a_matching_and_a_near_miss_excerpt():
    missing = sorted(_ids(ROOT) - set(CASES))
    assert not missing, f"root rules without a fixture pair in fixtures/rules/per_rule.py: {missing}"


def test_the_cases_name_only_root_rules_that_exist():
    assert sorted(set(CASES) - _ids(ROOT)) == []


def test_every_hint_rule_has_a_case():
    assert set(HINT_CASES) == _ids(HINT)


def test_the_roles_are_the_ones_these_tests_know():
    assert {item.role for item in RULES.values()} == {ROOT, HINT, CONFIRMATION, CASCADE}


# ---- root rules: one pair each -------------------------------------------------------------------------


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_the_matching_excerpt_is_diagnosed_with_its_rule(tmp_path, rule_id):
    matching, _ = CASES[rule_id]
    result = _diagnose(tmp_path, matching)
    assert (result.rule_id, result.category) == (rule_id, RULES[rule_id].category)
    assert result.fixes


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_the_near_miss_is_not_diagnosed_with_that_rule(tmp_path, rule_id):
    _, near_miss = CASES[rule_id]
    result = _diagnose(tmp_path, near_miss)
    assert result.rule_id != rule_id


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_the_excerpts_are_short(rule_id):
    matching, near_miss = CASES[rule_id]
    assert 1 <= len(matching.splitlines()) <= 6
    assert len(near_miss.splitlines()) == 1


# ---- hint rules: a frame or phase line suggests, the exception decides -------------------------------


@pytest.mark.parametrize("rule_id", sorted(HINT_CASES))
def test_a_hint_does_not_outrank_the_exception_a_root_rule_recognises(tmp_path, rule_id):
    _, with_root, root_id = HINT_CASES[rule_id]
    assert RULES[root_id].category != RULES[rule_id].category  # otherwise the test would prove nothing
    result = _diagnose(tmp_path, with_root)
    assert (result.rule_id, result.category) == (root_id, RULES[root_id].category)


@pytest.mark.parametrize("rule_id", sorted(HINT_CASES))
def test_a_hint_alone_is_at_most_a_weak_verdict(tmp_path, rule_id):
    alone, with_root, _ = HINT_CASES[rule_id]
    weak = _diagnose(tmp_path, alone.rstrip("\n"), "alone.log")
    strong = _diagnose(tmp_path, with_root, "with_root.log")
    # with nothing else in the log the engine may report the hint itself, never as surely as a root
    assert weak.rule_id in (rule_id, None)
    assert weak.category in (RULES[rule_id].category, "unknown")
    assert weak.confidence < strong.confidence


# ---- the confirmation rule: the kernel OOM killer supports host_oom ----------------------------------

_DMESG = "[81234.551] Out of memory: Killed process 4411 (python) total-vm:412000000kB, anon-rss:390000000kB"
_HOST_ALLOC = "OSError: [Errno 12] Cannot allocate memory"
_GPU_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB."


def test_the_confirmation_raises_the_confidence_of_its_category(tmp_path):
    (confirmation,) = _ids(CONFIRMATION)
    assert RULES[confirmation].category == "host_oom"
    plain = _diagnose(tmp_path, _HOST_ALLOC, "plain.log")
    confirmed = _diagnose(tmp_path, _HOST_ALLOC + "\n" + _DMESG, "confirmed.log")
    assert plain.rule_id == confirmed.rule_id == "memory.host_alloc"
    assert confirmed.category == "host_oom"
    assert confirmed.confidence > plain.confidence


def test_the_confirmation_firms_up_a_bare_kill(tmp_path):
    bare = _diagnose(tmp_path, "step 40/1000\nKilled", "bare.log")
    confirmed = _diagnose(tmp_path, "step 40/1000\nKilled\n" + _DMESG, "confirmed.log")
    assert bare.category == confirmed.category == "host_oom"
    assert confirmed.confidence > bare.confidence


def test_the_confirmation_does_not_take_over_another_category(tmp_path):
    result = _diagnose(tmp_path, _GPU_OOM + "\n" + _DMESG)
    assert (result.rule_id, result.category) == ("memory.cuda_oom", "gpu_oom")


# ---- the cascade rule: a consequence of another rank's failure, never the root -----------------------

CASCADE_LINES = [
    "[rank1]: RuntimeError: Connection reset by peer",
    "[rank2]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 2.",
    "W1201 10:02:11.410 api.py:897] Sending process 4412 closing signal SIGTERM",
    "BrokenPipeError: [Errno 32] Broken pipe",
    "pdsh@login1: gpu-node-07: ssh exited with exit code 1",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
]


@pytest.mark.parametrize("line", CASCADE_LINES)
def test_a_cascade_line_alone_is_never_the_root(tmp_path, line):
    (cascade,) = _ids(CASCADE)
    assert RULES[cascade].match(line), "the line must be one the cascade rule recognises"
    result = _diagnose(tmp_path, line)
    assert result.rule_id != cascade
    assert result.category == "unknown"


def test_a_cascade_line_yields_to_the_rank_that_broke(tmp_path):
    text = (
        "[rank0]: RuntimeError: Connection reset by peer\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB.\n"
        "[rank2]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 2."
    )
    result = _diagnose(tmp_path, text)
    assert (result.rule_id, result.category, result.failing_rank) == ("memory.cuda_oom", "gpu_oom", 1)


# ---- former false positives: benign lines that a root rule once took for the failure ------------------------
# Each line below is an ordinary start-up or status line; put before a real traceback it used to win over
# the traceback. The rules were narrowed; these stay so they remain fixed.
SUSPECT_LINES = {
    # the second alternative `(?:/dev/shm|unable to write to file </torch_)` matches any mention of /dev/shm
    "dataloader.shm_full": "Container started with --shm-size=16g, /dev/shm mounted for the workers",
    # `(?:uncorrectable )?ECC error` also matches a health report of zero errors
    "hardware.ecc": "GPU health before launch: 8 GPUs, ECC errors 0, temperature ok",
    # `bf16.{0,80}compute capability` matches a line that reports a GPU that supports bf16
    "config.precision": "Using bf16 mixed precision on NVIDIA H100 80GB HBM3 (compute capability 9.0)",
    # an optional import that the library falls back from is not a version mismatch
    "versions.cannot_import": "WARNING: xformers unavailable (No module named 'xformers'), using sdpa attention",
}
_REAL_FAILURE = (
    'Traceback (most recent call last):\n  File "/srv/sft/train.py", line 212, in <module>\n    main(cfg)\n'
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x4096 and 1024x4096)"
)


@pytest.mark.parametrize("rule_id", sorted(SUSPECT_LINES))
def test_a_benign_line_does_not_outrank_the_real_failure(tmp_path, rule_id):
    result = _diagnose(tmp_path, SUSPECT_LINES[rule_id] + "\n" + _REAL_FAILURE)
    assert result.rule_id == "code.shapes"


@pytest.mark.parametrize(
    "benign",
    [
        "WARNING: validation dataset is empty after filter, skipping eval",
        "deepspeed requires torch>=2.0: found 2.4.1, ok",
        "flash-attn is not installed; optional: pip install flash-attn for faster attention",
    ],
)
def test_a_line_that_says_the_job_went_on_does_not_outrank_the_real_failure(tmp_path, benign):
    result = _diagnose(tmp_path, benign + "\n" + _REAL_FAILURE)
    assert result.rule_id == "code.shapes"
