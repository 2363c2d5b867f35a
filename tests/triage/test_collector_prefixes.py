"""What a log collector puts before every line (timestamps, a quote, a pod tag, a logging level) changes
nothing: the rank prefixes, tracebacks, launcher blocks and warnings behind it read the same."""

from __future__ import annotations

import json

import pytest

from triage import diagnose

SRUN_RANKS = """\
3: [rank3]: Traceback (most recent call last):
3: [rank3]:   File "/work/pt/stream.py", line 77, in __iter__
3: [rank3]:     yield row["turns"]
3: [rank3]: KeyError: 'turns'
1: [rank1]: [E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.
"""

ROOT_CAUSE_BLOCK = """\
[W1105 08:00:01.120000 77 site-packages/torch/distributed/distributed_c10d.py:4561] or call init_process_group() with a device_id.
step 12/400 loss 2.114
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
fit.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-05_08:01:12
  host      : gpu-node-4
  rank      : 2 (local_rank: 2)
  exitcode  : -9 (pid: 4410)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4410
============================================================
"""

HOROVOD = """\
[2]<stderr>:Traceback (most recent call last):
[2]<stderr>:  File "/job/train.py", line 3, in <module>
[2]<stderr>:    import horovod.torch as hvd
[2]<stderr>:ImportError: /env/lib/python3.10/site-packages/horovod/torch/mpi_lib_v2.so: undefined symbol: _ZN3c10
"""

PDSH = """\
node-b3: [rank7]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5
node-b3: [rank7]: ncclInternalError: Internal check failed.
"""

WRAPPED_MESSAGE = """\
Traceback (most recent call last):
  File "/work/rl/resume.py", line 12, in restore
    state = torch.load(path)
_pickle.UnpicklingError: Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will likely succeed.
\tWeightsUnpickler error: Unsupported global: GLOBAL argparse.Namespace was not an allowed global by default.
"""

# `srun --label` task numbers, nothing else
SRUN_LABELS = """\
0: step 3 loss 2.01
1: Traceback (most recent call last):
1:   File "/opt/job/train.py", line 40, in <module>
1:     dist.init_process_group("nccl")
1: torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to (head-node, 29500).
"""

# an exception line with no traceback header above it (a rich box's message) whose message wraps
BARE_WRAPPED = """\
step 40/1200 loss 1.93
ValueError: per_device_train_batch_size 16 times gradient_accumulation_steps 3 does not
divide the global batch 100 set by train_batch_size
"""

TRANSFORMS = {
    "plain": lambda line: line,
    "kubectl-timestamps": lambda line: "2026-11-05T08:01:12.123456789Z " + line,
    "quoted": lambda line: "> " + line,
    "pod-tag": lambda line: "[pod/trainer-0/main] " + line,
    "logging-level": lambda line: "2026-11-05 08:01:12,123 - ERROR - " + line,
    "json-records": lambda line: json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-11-05T08:01:12Z"}),
    "compose-service": lambda line: "trainer-1  | " + line,
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("text, want", [
    (SRUN_RANKS, ("data_schema", "KeyError", 3)),
    (ROOT_CAUSE_BLOCK, ("host_oom", None, 2)),
    (HOROVOD, ("version_mismatch", "ImportError", 2)),
    (PDSH, ("nccl_error", "DistBackendError", 7)),
    (WRAPPED_MESSAGE, ("version_mismatch", "UnpicklingError", None)),
    (BARE_WRAPPED, ("config_invalid", "ValueError", None)),
    (SRUN_LABELS, ("rendezvous", "DistNetworkError", 1)),
], ids=["srun-ranks", "root-cause-block", "horovod", "pdsh-host", "wrapped-message", "bare-wrapped", "srun-labels"])
def test_a_collectors_lead_changes_nothing(tmp_path, name, text, want):
    log = tmp_path / "log.txt"
    log.write_text("\n".join(TRANSFORMS[name](line) for line in text.splitlines()) + "\n")
    result = diagnose([log])
    got = (result.category, result.root_cause.exception if result.root_cause else None, result.failing_rank)
    assert got == want
    if text is BARE_WRAPPED:  # the wrapped rest of the message is read through the lead too
        assert "divide the global batch 100" in result.root_cause.message


def test_a_trial_id_and_a_column_bar_before_the_exception(tmp_path):
    log = tmp_path / "trial-7-logs.txt"
    log.write_text("[2026-09-02T14:43:49.300611Z] 3e9a7f21 [rank=3] || torch.OutOfMemoryError: CUDA out of memory. "
                   "Tried to allocate 2.00 GiB.\n")
    result = diagnose([log])
    assert (result.category, result.root_cause.exception, result.failing_rank) == ("gpu_oom", "OutOfMemoryError", 3)


def test_a_kubernetes_warning_event_is_the_clusters_report_not_a_warning_to_discount(tmp_path):
    from triage import diagnose

    (tmp_path / "events.txt").write_text(
        "LAST SEEN   TYPE      REASON    OBJECT                 MESSAGE\n"
        "4m12s       Warning   Evicted   pod/sft-worker-1       Pod ephemeral local storage usage exceeds the total "
        "limit of containers 50Gi.\n")
    (tmp_path / "master-0.log").write_text(
        "[rank0]:[E0713 19:10:08.118000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=30871, OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1800093 milliseconds "
        "before timing out.\n")
    result = diagnose([tmp_path / "events.txt", tmp_path / "master-0.log"])
    assert result.category == "storage"
