"""The kernel's OOM killer names the pid it killed; a rank that reports a DataLoader worker of that pid
killed has printed the exception the job raised for it."""

from __future__ import annotations

from triage import diagnose

RANK = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/signal_handling.py", line 73, in handler
[rank1]:     _error_if_any_worker_fails()
[rank1]: RuntimeError: DataLoader worker (pid {worker}) is killed by signal: Killed.
"""
DMESG = """\
[Tue Mar  3 10:11:12 2026] python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0
[Tue Mar  3 10:11:12 2026] Out of memory: Killed process {killed} (python) total-vm:61455120kB, anon-rss:38912464kB
"""


def test_the_killed_workers_report_is_the_root_exception(tmp_path):
    (tmp_path / "job.log").write_text(RANK.format(worker=40412) + DMESG.format(killed=40412))
    result = diagnose([tmp_path / "job.log"])
    assert result.category == "host_oom"
    assert result.root_cause.exception == "RuntimeError"
    assert "pid 40412" in result.root_cause.message
    assert result.failing_rank == 1


def test_another_pid_killed_leaves_the_kernels_line_the_root(tmp_path):
    (tmp_path / "job.log").write_text(RANK.format(worker=40412) + DMESG.format(killed=39001))
    result = diagnose([tmp_path / "job.log"])
    assert result.category == "host_oom"
    assert "pid 40412" not in (result.root_cause.message or "")


def test_a_peers_watchdog_terminate_after_a_memory_kill_is_not_the_killed_ranks_exception(tmp_path):
    log = tmp_path / "job.out"
    log.write_text("\n".join([
        "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=5521.0. Some of your processes may have been "
        "killed by the cgroup out-of-memory handler.",
        "srun: error: node-b07: task 1: Out Of Memory",
        "[rank0]:[E601 10:40:02.1 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600070 "
        "milliseconds before timing out.",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with exception: "
        "[Rank 0] Watchdog caught collective operation timeout",
    ]) + "\n")
    result = diagnose([log])
    assert result.category == "host_oom"
    assert result.root_cause is None or result.root_cause.exception is None


def test_a_memory_kill_in_a_job_that_offloads_to_host_ram_names_that_setting_first(tmp_path):
    log = tmp_path / "job.out"
    log.write_text("\n".join([
        "[2026-06-01 10:00:00,900] [INFO] [config.py:1003:print] train_batch_size ............. 64",
        "[2026-06-01 10:00:01,000] [INFO] [config.py:1003:print] zero_optimization ... {'stage': 3, "
        "'offload_optimizer': {'device': 'cpu', 'pin_memory': True}, 'offload_param': {'device': 'cpu'}}",
        "train: dataloader_num_workers=8",
        "[2026-06-01 10:20:41] Out of memory: Killed process 41312 (python) total-vm:412000000kB, "
        "anon-rss:250000000kB",
        "[2026-06-01 10:20:42,101] [INFO] [launch.py:316:sigkill_handler] Killing subprocess 41312",
    ]) + "\n")
    result = diagnose([log], command="deepspeed --num_gpus 8 train.py --deepspeed ds.json "
                                     "--dataloader_num_workers 8")
    assert result.category == "host_oom"
    first = result.fixes[0]
    assert first["kind"] == "fix_config"
    assert first["title"] == "Offload less to host RAM (or give each node more)"


def test_a_worker_the_kernels_oom_killer_named_is_the_hosts_memory(tmp_path):
    from tests.triage.triage_helpers import diagnose_text

    worker = ("[rank5]: Traceback (most recent call last):\n"
              '[rank5]:   File "/opt/venv/lib/python3.8/site-packages/torch/utils/data/_utils/signal_handling.py", '
              "line 66, in handler\n"
              "[rank5]:     _error_if_any_worker_fails()\n"
              "[rank5]: RuntimeError: DataLoader worker (pid 41327) is killed by signal: Killed.\n")
    alone = diagnose_text(tmp_path, worker, name="alone.log")
    assert alone.category == "dataloader_worker"
    dmesg = ("$ dmesg -T | grep -i 'killed process'\n"
             "[Fri Sep 17 14:21:51 2021] Out of memory: Killed process 41327 (python) total-vm:39104552kB, "
             "anon-rss:9730112kB\n")
    named = diagnose_text(tmp_path, worker + dmesg, name="named.log")
    assert (named.category, named.failing_rank) == ("host_oom", 5)
    assert named.fixes[0]["kind"] == "reduce_dataloader_workers"
