"""The first failing rank: the rank that started the cascade, not the loudest one or the launcher's guess."""

from __future__ import annotations

import pytest
from triage_helpers import write

from triage import diagnose

FAILURES_BLOCK = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-30_15:04:29
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : {code1} (pid: 22095)
  error_file: <N/A>
  traceback : {trace1}
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-30_15:04:28
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 22094)
  error_file: /tmp/torchelastic/attempt_0/0/error.json
  traceback : Traceback (most recent call last):
    File "/w/train.py", line 34, in main
  RuntimeError: {root_message}
============================================================
"""


def test_it_blames_the_silent_rank_in_a_collective_timeout(tmp_path):
    log = write(
        tmp_path / "t.log",
        (
            "[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/w/train.py", line 34, in main\n'
            "[rank0]: RuntimeError: [gloo/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation to complete\n"
            "W1130 15:04:29.411000 22091 api.py:1028] Sending process 22095 closing signal SIGTERM\n"
            + FAILURES_BLOCK.format(
                code1="-15",
                trace1="Signal 15 (SIGTERM) received by PID 22095",
                root_message="Timed out waiting 5000ms for recv operation to complete",
            )
        ),
    )
    result = diagnose([log])
    assert result.category == "nccl_timeout"
    assert result.failing_rank == 1
    assert result.to_dict()["launcher_root_cause_rank"] == 0
    assert result.launcher_verdict_wrong is True
    statuses = {rank.rank: rank.status for rank in result.ranks}
    assert statuses[1] == "failed"


def test_it_blames_the_rank_killed_by_sigkill_not_the_one_that_lost_its_peer(tmp_path):
    log = write(
        tmp_path / "k.log",
        (
            "[rank0]: RuntimeError: [gloo/pair.cc:537] Read error [127.0.0.1]:13221: Connection reset by peer\n"
            "W1130 15:04:36.598000 22141 api.py:1028] Sending process 22144 closing signal SIGTERM\n"
            "E1130 15:04:36.615000 22141 api.py:1002] failed (exitcode: -9) local_rank: 1 (pid: 22145) of binary: py\n"
        ),
    )
    result = diagnose([log])
    assert result.category == "host_oom"
    assert result.failing_rank == 1
    assert result.root_cause.exception is None
    assert {rank.rank: rank.exit_code for rank in result.ranks}[1] == -9


def test_it_confirms_host_oom_with_the_kernel_oom_killer(tmp_path):
    log = write(
        tmp_path / "s.log",
        (
            "srun: error: gpu-node-12: task 3: Killed\n"
            "slurmstepd: error: Detected 1 oom_kill event in StepId=4411.0. Some of the step tasks have been OOM Killed.\n"
            "srun: error: gpu-node-12: tasks 0-2: Terminated\n"
        ),
    )
    result = diagnose([log])
    assert result.category == "host_oom"
    assert result.failing_rank == 3
    assert result.confidence >= 0.8


def test_it_blames_the_reporting_rank_when_no_other_rank_is_known(tmp_path):
    log = write(
        tmp_path / "w.log",
        (
            "{'loss': 0.0, 'learning_rate': 1e-05, 'epoch': 0.01}\n"
            "[rank5]:[E602 11:17:52.185 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=70, OpType=ALLREDUCE, NumelIn=1, Timeout(ms)=1800000) ran for 1800040 ms\n"
        ),
    )
    result = diagnose([log])
    assert result.category == "nccl_timeout"
    assert result.failing_rank == 5
    assert result.root_cause.exception is None


def test_it_prefers_a_real_error_over_a_later_timeout_on_another_rank(tmp_path):
    log = write(
        tmp_path / "m.log",
        (
            "[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB\n"
            "[rank0]: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=BROADCAST, "
            "Timeout(ms)=600000) ran for 600100 milliseconds before timing out.\n"
        ),
    )
    result = diagnose([log])
    assert result.category == "gpu_oom"
    assert result.failing_rank == 2


def test_it_ignores_distractor_warnings(tmp_path):
    log = write(
        tmp_path / "d.log",
        (
            "/usr/lib/python3/site-packages/torch/nn/parallel/distributed.py:1100: UserWarning: find_unused_parameters=True "
            "was specified in DDP constructor, but did not find any unused parameters.\n"
            "FutureWarning: `tokenizer` is deprecated and will be removed in version 5.0.0\n"
            "{'loss': 0.0, 'grad_norm': nan, 'epoch': 0.3}\n"
            "[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/w/train.py", line 12, in load\n'
            "[rank1]: json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column 99 (char 98)\n"
        ),
    )
    result = diagnose([log])
    assert result.category == "data_corrupt"
    assert result.failing_rank == 1


def test_it_names_the_one_rank_missing_from_the_timeout_reports(tmp_path):
    lines = [
        f"[E ProcessGroupNCCL.cpp:737] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=46, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out."
        for rank in (0, 1, 2, 4, 5)
    ]
    result = diagnose([write(tmp_path / "gap.log", "\n".join(lines) + "\n")])
    assert result.category == "nccl_timeout"
    assert result.failing_rank == 3


def test_one_watchdog_firing_among_four_silent_ranks_is_the_first_failure_shown(tmp_path):
    # the launcher killed the others when that one process aborted: nothing else tells them apart
    log = ("[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, "
           "OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800412 milliseconds before timing out.\n"
           "terminate called after throwing an instance of 'std::runtime_error'\n")
    result = diagnose([write(tmp_path / "one.log", log)], command="torchrun --nproc_per_node 4 t.py")
    assert (result.category, result.failing_rank) == ("nccl_timeout", 2)
    # a gloo wait timing out on one rank is that rank waiting on a stalled peer: no guess
    gloo = ("[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
            "20000ms for recv operation to complete\n")
    other = diagnose([write(tmp_path / "gloo.log", gloo)], command="torchrun --nproc_per_node 4 t.py")
    assert other.failing_rank is None


def test_it_does_not_guess_when_every_rank_reports_the_timeout(tmp_path):
    lines = [
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:737] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=46, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds"
        for rank in (0, 1)
    ]
    result = diagnose(
        [write(tmp_path / "all.log", "\n".join(lines) + "\n")], command="torchrun --nproc_per_node 2 t.py"
    )
    assert result.failing_rank is None


def test_it_names_the_rank_that_crashed_on_a_signal_even_without_a_signature(tmp_path):
    log = write(
        tmp_path / "segv.log",
        (
            "[rank0]: RuntimeError: [gloo/pair.cc:537] Read error [127.0.0.1]:13221: Connection reset by peer\n"
            "W1130 15:04:36.598000 22141 api.py:1028] Sending process 22144 closing signal SIGTERM\n"
            "E1130 15:04:36.615000 22141 api.py:1002] failed (exitcode: -11) local_rank: 1 (pid: 22145) of binary: py\n"
        ),
    )
    result = diagnose([log])
    assert result.category == "unknown"
    assert result.failing_rank == 1


def test_a_checkpoint_coordinator_reporting_another_ranks_traceback_names_that_rank(tmp_path):
    # torch.distributed.checkpoint gathers each failing rank's trace into rank 0's CheckpointException
    log = ("[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([5])\n"
           "[rank0]: Traceback (most recent call last): (RANK 5)\n"
           '[rank0]:   File "/venv/lib/python3.11/site-packages/torch/distributed/checkpoint/utils.py", line 212, '
           "in all_gather\n"
           "[rank0]:     result = map_fun()\n"
           '[rank0]:   File "/venv/lib/python3.11/site-packages/torch/distributed/checkpoint/filesystem.py", line 640, '
           "in create_stream\n"
           "[rank0]:     os.makedirs(path, exist_ok=True)\n"
           "[rank0]: PermissionError: [Errno 13] Permission denied: '/shared/ckpt/step_900'\n")
    result = diagnose([write(tmp_path / "dcp.log", log)], command="torchrun --nproc_per_node 8 t.py")
    assert (result.category, result.failing_rank) == ("storage", 5)


def test_the_rank_a_monitored_barrier_reports_missing_is_the_first_failure(tmp_path):
    log = ('[rank0]: Traceback (most recent call last):\n'
           '[rank0]:   File "/w/train.py", line 50, in main\n'
           '[rank0]:     dist.monitored_barrier(timeout=timedelta(seconds=30))\n'
           "[rank0]: RuntimeError: [Rank 0]: Rank 3 failed to pass monitoredBarrier in 30000 ms\n")
    result = diagnose([write(tmp_path / "mb.log", log)], command="torchrun --nproc_per_node 4 t.py")
    assert (result.category, result.failing_rank) == ("nccl_timeout", 3)


def test_sagemakers_mpirank_tag_names_the_rank(tmp_path):
    log = ("[1,mpirank:5,algo-2]<stderr>:Traceback (most recent call last):\n"
           '[1,mpirank:5,algo-2]<stderr>:  File "/opt/ml/code/run.py", line 30, in <module>\n'
           "[1,mpirank:5,algo-2]<stderr>:    main()\n"
           "[1,mpirank:5,algo-2]<stderr>:KeyError: 'messages'\n")
    assert diagnose([write(tmp_path / "cw.log", log)]).failing_rank == 5


def test_rays_re_raise_line_names_the_worker_pid_the_start_up_table_maps(tmp_path):
    log = ("(TorchTrainer pid=500) - (node_id=aa, ip=10.0.0.2, pid=611) world_rank=0, local_rank=0, node_rank=0\n"
           "(TorchTrainer pid=500) - (node_id=bb, ip=10.0.0.3, pid=712) world_rank=1, local_rank=0, node_rank=1\n"
           "ray.exceptions.RayTaskError(OutOfMemoryError): ray::_Inner.train() (pid=500, ip=10.0.0.2)\n"
           "ray.exceptions.RayTaskError(OutOfMemoryError): ray::RayTrainWorker.execute() (pid=712, ip=10.0.0.3)\n"
           '  File "/job/train_fn.py", line 88, in train_loop_per_worker\n'
           "    trainer.train()\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.35 GiB. GPU 0 has a total capacity of "
           "23.68 GiB of which 1.12 GiB is free.\n")
    result = diagnose([write(tmp_path / "driver.log", log)])
    assert (result.category, result.failing_rank) == ("gpu_oom", 1)


def test_a_ranks_own_network_transport_failure_is_why_the_others_timed_out(tmp_path):
    watchdog = ("[E1130 13:49:45.300112 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800087 milliseconds\n")
    text = "".join(watchdog.format(r=r) for r in (0, 1, 3))
    text += ("[rank2]: node-1:7114:7301 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
             "10.1.0.4<51320> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.1.0.5\n")
    result = diagnose([write(tmp_path / "all.log", text)], command="torchrun --nproc_per_node 4 t.py")
    assert (result.category, result.failing_rank) == ("nccl_error", 2)


@pytest.mark.parametrize("lead", ["", "2026-11-28T03:41:10.550Z "], ids=["driver-log", "kubectl-timestamps"])
def test_a_ray_actors_pid_seen_with_its_rank_tag_names_the_rank_of_its_remote_error(tmp_path, lead):
    log = ("(WorkerDict pid=700) [rank0]:[W1128 03:41:10.550118213 ProcessGroupNCCL.cpp:4718] using GPU 0\n"
           "(WorkerDict pid=811, ip=10.0.0.3) [rank3]:[W1128 03:41:15.555118213 ProcessGroupNCCL.cpp:4718] using GPU 1\n"
           "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.compute_log_prob() (pid=811, ip=10.0.0.3)\n"
           '  File "/w/verl/workers/fsdp_workers.py", line 700, in compute_log_prob\n'
           "    output = self.actor.compute_log_prob(data)\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 10.18 GiB. GPU 1 has a total capacity of "
           "79.25 GiB of which 6.1 GiB is free.\n")
    log = "".join(lead + line for line in log.splitlines(keepends=True))
    result = diagnose([write(tmp_path / "driver.log", log)])
    assert (result.category, result.failing_rank) == ("gpu_oom", 3)


def test_a_traceback_logged_under_a_ranked_logger_line_is_that_ranks(tmp_path):
    log = ("2026-11-30 04:13:01,002 [rank0] INFO train: step 400 loss 2.1\n"
           "2026-11-30 04:13:02,744 [rank1] ERROR train: uncaught exception, shutting down\n"
           "Traceback (most recent call last):\n"
           '  File "/opt/summ/summ_data.py", line 58, in __iter__\n'
           "    rec = json.loads(line)\n"
           "json.decoder.JSONDecodeError: Unterminated string starting at: line 1 column 512 (char 511)\n"
           "2026-11-30 04:13:03,100 [rank0] INFO train: step 401 loss 2.0\n")
    result = diagnose([write(tmp_path / "train.log", log)])
    assert (result.category, result.failing_rank) == ("data_corrupt", 1)


def test_a_rank_killed_before_any_watchdog_fired_is_why_its_peers_timed_out(tmp_path):
    # node 1's launcher saw local rank 1 (global 3) SIGKILLed; half an hour later node 0's watchdogs fire
    node0 = "".join(
        f"[rank{r}]:[E1020 20:07:58.{r}00000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=880, OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800012 "
        "milliseconds before timing out.\n" for r in (0, 1))
    node1 = ("E1020 19:37:58.902000 7101 torch/distributed/elastic/multiprocessing/api.py:869] failed "
             "(exitcode: -9) local_rank: 1 (pid: 90417) of binary: /opt/env/bin/python3.11\n")
    result = diagnose([write(tmp_path / "node0.out", node0), write(tmp_path / "node1.out", node1)],
                      command="torchrun --nnodes 2 --node_rank 1 --nproc_per_node 2 train.py")
    assert (result.category, result.failing_rank) == ("host_oom", 3)
    # killed after the watchdogs fired, the rank is their victim, not their cause
    late = node1.replace("19:37:58", "20:09:30")
    result = diagnose([write(tmp_path / "a.out", node0), write(tmp_path / "b.out", late)],
                      command="torchrun --nnodes 2 --node_rank 1 --nproc_per_node 2 train.py")
    assert result.category == "nccl_timeout"


def _watchdog(rank: int, when: str) -> str:
    return (f"[rank{rank}]:[E{when} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=2001, OpType=ALLREDUCE, Timeout(ms)=100000) ran for 100004 milliseconds "
            "before timing out.\n")


def test_every_rank_timing_out_names_the_one_whose_watchdog_fired_well_before_the_rest(tmp_path):
    # torch prints the month unpadded ("E612" is June 12th): the clock must still be read
    files = [write(tmp_path / f"{rank}" / "stderr.log", _watchdog(rank, "612 22:41:06.9" if rank != 2 else
                                                                 "612 22:39:52.0")) for rank in range(4)]
    result = diagnose(files, command="torchrun --nproc_per_node 4 train.py")
    assert (result.category, result.failing_rank) == ("nccl_timeout", 2)
    # within a second of each other, nothing sets one apart
    files = [write(tmp_path / "b" / f"{rank}.log", _watchdog(rank, f"612 22:41:06.{rank}")) for rank in range(4)]
    assert diagnose(files, command="torchrun --nproc_per_node 4 train.py").failing_rank is None


def test_in_one_file_the_reading_order_decides_whatever_lines_carry_a_clock(tmp_path):
    # the traceback (no clock) is printed before the watchdog's restatement (with a clock) of the same assert
    log = ("Traceback (most recent call last):\n"
           '  File "/w/train.py", line 80, in step\n'
           "    loss.backward()\n"
           "RuntimeError: CUDA error: device-side assert triggered\n"
           "[rank1]:[E603 22:45:01.227301981 ProcessGroupNCCL.cpp:1515] [PG 0 Rank 1] Process group watchdog "
           "thread terminated with exception: CUDA error: device-side assert triggered\n")
    result = diagnose([write(tmp_path / "train_out.txt", log)])
    assert (result.category, result.root_cause.exception) == ("cuda_error", "RuntimeError")


def test_torchs_barrier_device_warning_is_no_missing_process_group(tmp_path):
    warning = ("[rank{r}]:[W613 14:50:0{r}.211842 ProcessGroupNCCL.cpp:4598] [PG ID 0 PG GUID 0 Rank {r}]  using GPU "
               "0 to perform barrier as devices used by this process are currently unknown. This can potentially "
               "cause a hang if this rank to GPU mapping is incorrect. Specify device_ids in barrier() to force use "
               "of a particular device, or call init_process_group() with a device_id.\n")
    text = "".join(warning.format(r=r) for r in range(4)) + _watchdog(2, "613 14:52:07.3")
    result = diagnose([write(tmp_path / "run.log", text)], command="torchrun --nproc_per_node 4 train.py")
    assert result.category == "nccl_timeout"


def test_a_ray_actor_named_with_its_rank_gives_the_rank_of_its_traceback(tmp_path):
    lead = "(MegatronPolicyWorker[rank=13] pid=811291, ip=10.0.2.53) "
    text = "".join(lead + line + "\n" for line in (
        "Traceback (most recent call last):",
        '  File "/opt/rl/policy/megatron_worker.py", line 1204, in get_logprobs',
        "    logits = self.model(batch)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.28 GiB. GPU 0 has a total capacity of "
        "79.19 GiB of which 3.1 GiB is free."))
    result = diagnose([write(tmp_path / "driver.log", text)])
    assert (result.category, result.failing_rank) == ("gpu_oom", 13)


def test_a_rankless_warning_that_explains_the_failure_takes_the_rank_that_raised_the_same_kind_of_error(tmp_path):
    text = ("[WARNING|2026-05-20 10:11:26] llamafactory.data.converter:148 >> Invalid role tag in [{'from': "
            "'human', 'value': 'hi'}].\n"
            "[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/opt/lf/src/llamafactory/data/loader.py", line 290, in get_dataset\n'
            "[rank0]:     raise RuntimeError(\"Cannot find valid samples, check `data/README.md` for the data format.\")\n"
            "[rank0]: RuntimeError: Cannot find valid samples, check `data/README.md` for the data format.\n"
            + _watchdog(9, "520 10:21:48.1")
            + "E0520 10:21:50.881000 7001 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) "
              "local_rank: 1 (pid: 7012) of binary: /opt/env/bin/python\n")
    result = diagnose([write(tmp_path / "both_nodes.log", text)],
                      command="torchrun --nnodes 2 --nproc_per_node 8 train.py")
    assert (result.category, result.failing_rank) == ("data_schema", 0)


def test_ncclcomminitrank_lines_turn_an_xids_pid_into_its_rank(tmp_path):
    init = "".join(
        f"gpu-08:{51230 + d}:{51410 + d} [{d}] NCCL INFO ncclCommInitRank comm 0x5{d}a1c3e0 rank {8 + d} nranks 16 "
        f"cudaDev {d} nvmlDev {d} busId {d}1000 commId 0x9f1b22c07aa31e4d - Init START\n" for d in range(4))
    # a tensor-parallel sub-group numbers its ranks from 0 again: it must not overwrite the global numbering
    init += "gpu-08:51233:51499 [3] NCCL INFO ncclCommInitRank comm 0x7 rank 1 nranks 2 cudaDev 3 busId 31000 - Init START\n"
    dmesg = "[Tue Jul  8 03:17:38 2026] NVRM: Xid (PCI:0000:31:00): 79, pid=51233, name=python3, GPU has fallen off the bus.\n"
    result = diagnose([write(tmp_path / "node1.log", init), write(tmp_path / "dmesg.txt", dmesg)])
    assert (result.category, result.failing_rank) == ("hardware", 11)


def test_a_stack_dump_of_a_rank_waiting_in_a_file_lock_is_why_the_others_timed_out(tmp_path):
    dump = ("$ py-spy dump --pid 18270\n"
            'Thread 18270 (idle): "MainThread"\n'
            "    acquire (filelock/_api.py:344)\n"
            "    __enter__ (filelock/_api.py:376)\n"
            "    download_and_prepare (datasets/builder.py:870)\n")
    log = "".join(_watchdog(rank, "612 22:41:06.9") for rank in (1, 2, 3))
    result = diagnose([write(tmp_path / "pyspy-rank0.txt", dump), write(tmp_path / "train.log", log)],
                      command="torchrun --nproc_per_node 4 train.py")
    assert (result.category, result.failing_rank, result.fixes[0]["kind"]) == ("storage", 0, "fix_path")


def test_srun_labels_are_nodes_when_srun_starts_one_launcher_per_node(tmp_path):
    text = ("1: Traceback (most recent call last):\n"
            '1:   File "/jobs/pt/train.py", line 40, in <module>\n'
            "1:     batch = next(loader)\n"
            "1: KeyError: 'turns'\n")
    log = write(tmp_path / "slurm-881.out", text)
    per_node = diagnose([log], command="srun --label --nodes 2 --ntasks-per-node 1 torchrun --nnodes 2 "
                                       "--nproc_per_node 4 train.py")
    assert per_node.category == "data_schema" and per_node.failing_rank is None  # node 1 holds ranks 4-7
    per_rank = diagnose([log], command="srun --label --ntasks 8 python train.py")
    assert per_rank.failing_rank == 1


def _collective_failure(rank: int, line: int, call: str, error: str) -> str:
    return "\n".join([
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/work/nlu/fit_slots.py", line {line}, in run_epoch',
        f"[rank{rank}]:     {call}",
        f'[rank{rank}]:   File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 4810, '
        "in barrier",
        f"[rank{rank}]:     work.wait()",
        f"[rank{rank}]: RuntimeError: {error}",
    ]) + "\n"


@pytest.mark.parametrize("late_line", [88, 121])
def test_the_rank_waiting_at_another_line_is_first_when_the_quiet_one_lost_a_peer_at_the_others_line(
        tmp_path, late_line):
    closed = "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.1.0.4]:4411"
    timed = "[../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 30000ms for recv operation"
    log = (_collective_failure(1, 88, "loss.backward()", closed)        # lost a peer while in the step's all-reduce
           + _collective_failure(3, 121, "dist.barrier()", timed)      # left the loop early, waits at the barrier
           + _collective_failure(0, 88, "loss.backward()", timed)
           + _collective_failure(2, 88, "loss.backward()", timed))
    if late_line == 88:
        # the quiet rank arrived late at the very line the others timed out in: it is the one that stalled
        log = log.replace('line 121, in run_epoch', 'line 88, in run_epoch')
    result = diagnose([write(tmp_path / "ddp.log", log)], command="torchrun --nproc_per_node 4 fit_slots.py")
    assert result.category == "nccl_timeout"
    assert result.failing_rank == (1 if late_line == 88 else 3)


def _root_block(label: str, when: str, host: str, rank: int, local: int, code: int) -> str:
    return "\n".join(f"{label}: {line}" for line in [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "=" * 60, "asr.py FAILED", "-" * 60,
        "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60, "Root Cause (first observed failure):", "[0]:",
        f"  time      : {when}", f"  host      : {host}", f"  rank      : {rank} (local_rank: {local})",
        f"  exitcode  : {code} (pid: {4000 + rank})", "  error_file: <N/A>", "=" * 60]) + "\n"


@pytest.mark.parametrize(("second", "expected"), [("2026-03-02_11:40:21", 10), ("2026-03-02_11:40:07", 4)])
def test_of_two_nodes_root_cause_blocks_one_well_after_the_other_is_its_consequence(tmp_path, second, expected):
    log = ("1: [rank10]: RuntimeError: CUDA error: unspecified launch failure\n"
           "0: [rank4]: RuntimeError: CUDA error: unspecified launch failure\n"
           + _root_block("1", "2026-03-02_11:40:06", "gpu-k09", 10, 2, 1)
           + _root_block("0", second, "gpu-k08", 4, 4, -6)
           + "gpu-k09: NVRM: Xid (PCI:0000:4e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
    result = diagnose([write(tmp_path / "slurm.out", log)])
    assert result.category == "hardware"
    # 15 s later: the second node's block is the consequence; a second apart, node clocks cannot tell them apart
    assert result.failing_rank == expected


def test_a_batch_scripts_set_x_trace_of_srun_starting_torchrun_makes_the_labels_nodes(tmp_path):
    text = ("1: Traceback (most recent call last):\n"
            '1:   File "/jobs/pt/train.py", line 40, in <module>\n'
            "1:     batch = next(loader)\n"
            "1: KeyError: 'turns'\n")
    traced = write(tmp_path / "slurm-882.out", "+ srun -l --ntasks-per-node=1 torchrun --nnodes 2 --nproc_per_node 4 "
                                               "train.py\n" + text)
    assert diagnose([traced]).failing_rank is None  # node 1 holds ranks 4-7
    per_rank = write(tmp_path / "slurm-883.out", "+ srun -l --ntasks 8 python train.py\n" + text)
    assert diagnose([per_rank]).failing_rank == 1


def test_rays_memory_monitor_detail_line_names_the_killed_workers_pid(tmp_path):
    log = ("(TorchTrainer pid=500) - (node_id=aa, ip=10.0.0.2, pid=611) world_rank=0, local_rank=0, node_rank=0\n"
           "(TorchTrainer pid=500) - (node_id=bb, ip=10.0.0.3, pid=712) world_rank=1, local_rank=0, node_rank=1\n"
           "(TorchTrainer pid=500) - (node_id=bb, ip=10.0.0.3, pid=713) world_rank=2, local_rank=1, node_rank=1\n"
           "(raylet, ip=10.0.0.3) node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure "
           "(OOM), 0 Workers crashed due to other reasons at node (ID: bb, IP: 10.0.0.3) over the last time period.\n"
           "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
           "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
           "detail: Task was killed due to the node running low on memory.\n"
           "Memory on the node (IP: 10.0.0.3, ID: bb) where the task (actor ID: 9f, name=RayTrainWorker.__init__, "
           "pid=713, memory used=41.02GB) was running was 120.4GB / 125.8GB (0.957), which exceeds the memory usage "
           "threshold of 0.95.\n")
    result = diagnose([write(tmp_path / "driver.log", log)])
    assert (result.category, result.failing_rank) == ("host_oom", 2)


def test_srun_naming_the_one_task_out_of_memory_is_that_rank_with_no_exception_of_its_peers(tmp_path):
    peer = ("[rank{r}]: Traceback (most recent call last):\n"
            '[rank{r}]:   File "/jobs/churn/fit.py", line 55, in main\n'
            "[rank{r}]:     model = DDP(model)\n"
            "[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
            "[127.0.0.1]:5034\n")
    log = ("slurmstepd: error: Detected 1 oom_kill event in StepId=731902.0. Some of your processes may have been "
           "killed by the cgroup out-of-memory handler.\n"
           + "".join("2: " + line + "\n" for line in peer.format(r=2).splitlines())
           + "".join("0: " + line + "\n" for line in peer.format(r=0).splitlines())
           + "srun: error: cn07: task 1: Out Of Memory\n")
    result = diagnose([write(tmp_path / "slurm-731902.out", log)], command="srun -n 3 python fit.py")
    assert (result.category, result.failing_rank) == ("host_oom", 1)
    assert result.root_cause.exception is None  # the peers' lost connections are not its error
    # srun starting one torchrun per node: task 1 is a node, not rank 1
    per_node = diagnose([write(tmp_path / "slurm-731903.out", log)],
                        command="srun --nodes 3 --ntasks-per-node 1 torchrun --nnodes 3 --nproc_per_node 4 fit.py")
    assert per_node.failing_rank != 1


def test_a_one_process_replica_pod_lends_the_rank_its_environment_names_to_its_unranked_lines(tmp_path):
    log = "".join([
        "[pod/ft-master-0/pytorch] 2026-01-20T10:01:50Z env RANK=0 WORLD_SIZE=3 MASTER_ADDR=ft-master-0\n",
        "[pod/ft-worker-0/pytorch] 2026-01-20T10:01:51Z env RANK=1 WORLD_SIZE=3 MASTER_ADDR=ft-master-0\n",
        "[pod/ft-worker-1/pytorch] 2026-01-20T10:01:52Z env RANK=2 WORLD_SIZE=3 MASTER_ADDR=ft-master-0\n",
        "[pod/ft-worker-1/pytorch] 2026-01-20T10:02:14Z ImportError: cannot import name 'clear_device_cache' from "
        "'accelerate.utils.memory'\n",
        "[pod/ft-master-0/pytorch] 2026-01-20T10:32:12Z torch.distributed.DistStoreError: Timed out after 1801 seconds "
        "waiting for clients. 2/3 clients joined.\n",
    ])
    result = diagnose([write(tmp_path / "kubectl-logs-all.txt", log)])
    assert (result.category, result.failing_rank) == ("version_mismatch", 2)
    # the pod tag read behind a collector's own lead as well
    led = "".join(f"trainer-1  | {line}\n" for line in log.splitlines())
    assert diagnose([write(tmp_path / "led.txt", led)]).failing_rank == 2


def test_a_describe_of_a_replica_pod_gives_its_oomkilled_state_the_rank_variable_printed_below_it(tmp_path):
    describe = ("Name:             rec-worker-1\n    State:          Terminated\n      Reason:       OOMKilled\n"
                "      Exit Code:    137\n    Environment:\n      WORLD_SIZE:   4\n      RANK:         2\n")
    master = "2026-01-20T02:31:07.902Z torch.distributed.DistBackendError: NCCL error: remote process exited\n"
    result = diagnose([write(tmp_path / "kubectl-describe-rec-worker-1.txt", describe),
                       write(tmp_path / "rec-master-0.log", master)])
    assert (result.category, result.failing_rank) == ("host_oom", 2)
    # a pod whose lines name two ranks runs several processes: it lends no rank
    two = write(tmp_path / "kubectl-describe-rec-worker-2.txt",
                describe.replace("RANK:         2", "RANK:         4\n[rank5]: Loading checkpoint shards: 100%"))
    assert diagnose([two, write(tmp_path / "rec-master-0.log", master)]).failing_rank != 4


def test_an_xids_pci_address_names_the_rank_whose_nccl_start_up_line_has_that_bus_id_on_that_host(tmp_path):
    def init(host, pid, rank, dev, bus):
        return (f"[rank{rank}]:{host}:{pid}:{pid + 170} [{dev}] NCCL INFO comm 0x55ae05feeb08 rank {rank} nranks 16 "
                f"cudaDev {dev} nvmlDev {dev} busId {bus} commId 0x91c3e5d07ab24f18 - Init COMPLETE\n")
    node0 = tmp_path / "gpu-c21"
    node1 = tmp_path / "gpu-c22"
    node0.mkdir()
    node1.mkdir()
    (node0 / "console.log").write_text(init("gpu-c21", 51235, 5, 5, "ba000") + init("gpu-c21", 51236, 6, 6, "bb000"))
    (node1 / "console.log").write_text(init("gpu-c22", 60418, 13, 5, "ba000") + init("gpu-c22", 60419, 14, 6, "bb000"))
    (node1 / "dmesg.txt").write_text("[Thu Apr 10 02:14:04 2025] NVRM: Xid (PCI:0000:ba:00): 79, pid='<unknown>', "
                                     "name=<unknown>, GPU has fallen off the bus.\n")
    result = diagnose([node0, node1])
    assert (result.category, result.failing_rank) == ("hardware", 13)


def test_a_pdsh_nodes_local_rank_counts_from_the_node_rank_its_deepspeed_launcher_printed(tmp_path):
    # three nodes of 4; the third node's launcher says where it sits, then its local rank 1 runs out of memory
    lines = [f"trn-{n}: [2026-02-02 10:00:0{n},100] [INFO] [launch.py:152:main] nnodes=3, num_local_procs=4, "
             f"node_rank={n}" for n in range(3)]
    lines += [
        "trn-2: Traceback (most recent call last):",
        "trn-2:   File \"/srv/ft/run_sft.py\", line 88, in <module>",
        "trn-2:     engine.backward(loss)",
        "trn-2: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 79.10 GiB total "
        "capacity; 76.00 GiB already allocated)",
        "trn-2: [2026-02-02 10:05:00,200] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', "
        "'run_sft.py', '--local_rank=1', '--deepspeed', 'z2.json'] exits with return code = 1",
        "trn-0: [rank3]:[E202 10:35:00.1 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=90, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, Timeout(ms)=1800000) ran for "
        "1800100 milliseconds before timing out.",
    ]
    result = diagnose([write(tmp_path / "pdsh.log", "\n".join(lines) + "\n")])
    assert result.category == "gpu_oom"
    assert result.failing_rank == 9  # node 2 starts at 8


def test_a_lost_gpus_rank_is_the_one_gap_among_its_nodes_watchdog_reports(tmp_path):
    # the second node's log alone: ranks 4-7 but 6 time out, then the kernel says a GPU fell off the bus
    lines = [f"[rank{r}]:[E301 02:00:00.{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
             f"operation timeout: WorkNCCL(SeqNum=4410, OpType=ALLGATHER, NumelIn=64, NumelOut=512, "
             f"Timeout(ms)=600000) ran for 600050 milliseconds before timing out." for r in (4, 5, 7)]
    lines += ["[Sun Mar  1 01:51:00 2026] NVRM: Xid (PCI:0000:c1:00): 79, pid=55120, name=python, "
              "GPU has fallen off the bus."]
    result = diagnose([write(tmp_path / "node1.log", "\n".join(lines) + "\n")])
    assert result.category == "hardware"
    assert result.failing_rank == 6


def test_one_rank_waiting_in_another_operation_at_the_same_seqnum_is_out_of_step(tmp_path):
    # every rank's watchdog fires at SeqNum 300; rank 2 alone waits in an all-gather, the rest in an all-reduce
    lines = []
    for r in range(4):
        op, numel = ("_ALLGATHER_BASE", 4096) if r == 2 else ("ALLREDUCE", 1)
        lines.append(f"[rank{r}]:[E0412 08:00:00.{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
                     f"collective operation timeout: WorkNCCL(SeqNum=300, OpType={op}, NumelIn={numel}, "
                     f"NumelOut={numel}, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")
    command = "accelerate launch -m axolotl.cli.train recipe.yml"
    recipe = write(tmp_path / "recipe.yml", "base_model: tiny\nsample_packing: true\nmicro_batch_size: 2\n")
    result = diagnose([write(tmp_path / "train.log", "\n".join(lines) + "\n")], command=command,
                      config_paths=[str(recipe)])
    assert result.category == "nccl_timeout"
    assert result.failing_rank == 2
    first = result.fixes[0]
    # a recipe run: the recipe's packing gave the ranks unequal batch counts, so the recipe changes first
    assert first["kind"] == "fix_config"
    assert first["config_patch"] == {"recipe.yml": {"sample_packing": False}}
    assert "increase_timeout" in [fix["kind"] for fix in result.fixes][2:]


def test_the_rank_that_skipped_a_step_waits_at_another_line_while_the_others_time_out_or_lose_it(tmp_path):
    def tb(rank, line, call, error):
        return (f"[rank{rank}]: Traceback (most recent call last):\n"
                f'[rank{rank}]:   File "/opt/seq/train_mlm.py", line {line}, in main\n'
                f"[rank{rank}]:     {call}\n"
                f"[rank{rank}]: RuntimeError: {error}\n")
    timeout = "[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 9000ms for recv"
    lost = "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:4021"
    log = (tb(0, 141, "loss.backward()", lost) + tb(2, 180, "dist.barrier()", timeout)
           + tb(1, 141, "loss.backward()", timeout) + tb(3, 141, "loss.backward()", lost))
    result = diagnose([write(tmp_path / "run.log", log)])
    assert result.category == "nccl_timeout"
    assert result.failing_rank == 2  # at the final barrier while every other rank is still in backward
    assert result.fixes[0]["kind"] in ("fix_code", "fix_data_file")


def test_a_full_disk_begins_at_its_earliest_form_whichever_words_a_later_rank_used(tmp_path):
    log = ("[rank3]: Traceback (most recent call last):\n"
           '[rank3]:   File "/usr/lib/python3.11/site-packages/torch/serialization.py", line 850, in save\n'
           "[rank3]:     _save(obj, opened_zipfile, pickle_module, pickle_protocol)\n"
           "[rank3]: RuntimeError: [enforce fail at inline_container.cc:783] . PytorchStreamWriter failed writing "
           "file data/12: file write failed\n"
           "[rank0]: Traceback (most recent call last):\n"
           '[rank0]:   File "/srv/ft/ckpt.py", line 40, in save_shard\n'
           "[rank0]:     fh.write(blob)\n"
           "[rank0]: OSError: [Errno 28] No space left on device\n")
    result = diagnose([write(tmp_path / "save.log", log)])
    assert result.category == "storage"
    assert result.failing_rank == 3
    assert result.root_cause.exception == "RuntimeError"


def test_ray_trains_driver_wrapper_is_never_the_root_and_its_re_raise_names_the_workers_pid(tmp_path):
    log = "\n".join([
        "(TorchTrainer pid=700, ip=10.0.0.1) - (ip=10.0.0.1, pid=811) world_rank=0, local_rank=0, node_rank=0",
        "(TorchTrainer pid=700, ip=10.0.0.1) - (ip=10.0.0.2, pid=912) world_rank=1, local_rank=0, node_rank=1",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/site-packages/ray/_private/worker.py", line 2624, in get',
        "    raise value.as_instanceof_cause()",
        "ray.exceptions.RayTaskError(ZeroDivisionError): ray::_RayTrainWorker__execute.get_next() (pid=912, "
        "ip=10.0.0.2, actor_id=ab12)",
        '  File "/home/ray/app/train_fn.py", line 40, in score',
        "    recall = hits / total",
        "ZeroDivisionError: division by zero",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/home/ray/app/launch.py", line 12, in <module>',
        "    trainer.fit()",
        "ray.train.base_trainer.TrainingFailedError: The Ray Train run failed. Please inspect the previous error "
        "messages for a cause.",
    ]) + "\n"
    result = diagnose([write(tmp_path / "driver.log", log)])
    assert result.root_cause.exception == "ZeroDivisionError"
    assert result.category == "code_bug"
    assert result.failing_rank == 1


def test_a_rank_whose_gloo_pair_was_closed_after_a_timeout_was_waiting_not_stalled(tmp_path):
    # rank 2 timed out waiting for a recv; rank 1's pair was closed by that timeout; rank 0 (validating on its own)
    # printed nothing: it is the rank the others waited for
    lines = [f"12:00:0{rank} [ocr][rank{rank}] epoch 0 step 8 loss 3.{rank}" for rank in range(3)]
    lines += ["[rank1]: Traceback (most recent call last):",
              '[rank1]:   File "/srv/ocr/fit.py", line 90, in run',
              "[rank1]:     loss.backward()",
              "[rank1]: RuntimeError: Application timeout caused pair closure",
              "[rank2]: Traceback (most recent call last):",
              '[rank2]:   File "/srv/ocr/fit.py", line 88, in run',
              "[rank2]:     out = model(x)",
              "[rank2]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out "
              "waiting 15000ms for recv operation to complete"]
    log = write(tmp_path / "fit.log", "\n".join(lines) + "\n")
    result = diagnose([log], command="torchrun --nproc_per_node 3 fit.py")
    assert result.category == "nccl_timeout"
    assert result.failing_rank == 0


def test_a_deepspeed_jobs_store_port_in_use_is_rank_0s_own_server(tmp_path):
    # the store server is bound by global rank 0's init_process_group; the launcher's kill line names the last
    # process it started (local rank 3), not the one whose bind failed
    from tests.triage.triage_helpers import diagnose_text

    site = "/opt/venv/lib/python3.10/site-packages/torch/distributed"
    text = (
        "[2024-03-02 10:00:01,100] [INFO] [launch.py:151:main] nnodes=1, num_local_procs=4, node_rank=0\n"
        "Traceback (most recent call last):\n"
        '  File "/home/q/vlm/train.py", line 40, in <module>\n'
        "    deepspeed.init_distributed()\n"
        f'  File "{site}/distributed_c10d.py", line 1170, in init_process_group\n'
        "    store, rank, world_size = next(rendezvous_iterator)\n"
        f'  File "{site}/rendezvous.py", line 246, in _env_rendezvous_handler\n'
        "    store = _create_c10d_store(master_addr, master_port, rank, world_size, timeout)\n"
        f'  File "{site}/rendezvous.py", line 174, in _create_c10d_store\n'
        "    return TCPStore(\n"
        "RuntimeError: The server socket has failed to listen on any local network address. The server socket "
        "has failed to bind to [::]:29611 (errno: 98 - Address already in use).\n"
        "[2024-03-02 10:00:09,022] [ERROR] [launch.py:321:sigkill_handler] ['/opt/venv/bin/python', '-u', "
        "'train.py', '--local_rank=3', '--deepspeed', 'ds.json'] exits with return code = 1\n"
    )
    result = diagnose_text(tmp_path, text, command="deepspeed --num_gpus 4 train.py --deepspeed ds.json")
    assert (result.category, result.failing_rank) == ("rendezvous", 0)


def test_ranks_waiting_at_the_start_up_barrier_name_the_one_that_never_came(tmp_path):
    # seven of eight ranks wait in the store-based barrier of init_process_group and print nothing else; the
    # missing rank was stuck before it (a network retry loop on the main process)
    from tests.triage.triage_helpers import diagnose_text

    text = "".join(
        f"I0511 07:{minute:02d}:44.75 1398601 distributed_c10d.py:337] Waiting in store based barrier to initialize "
        f"process group for rank: {rank}, key: store_based_barrier_key:2 (world_size=8, worker_count=7, "
        "timeout=0:30:00)\n"
        for minute in (28, 38) for rank in (4, 2, 5, 6, 1, 3, 7))
    text += "wandb: Network error (ConnectTimeout), entering retry loop.\n"
    result = diagnose_text(tmp_path, text, command="accelerate launch --num_processes 8 train_lm.py")
    assert (result.category, result.failing_rank) == ("rendezvous", 0)
    assert result.fixes[0]["kind"] == "fix_config"


def test_a_module_pinned_to_gpu0_meeting_a_ranks_own_gpu_names_that_rank(tmp_path):
    # one process per GPU: rank 0's tensors are on cuda:0 anyway, so the process whose tensors on cuda:1 met the
    # script's helper network left on cuda:0 is local rank 1
    from tests.triage.triage_helpers import diagnose_text

    text = ("Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n"
            "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
            "Traceback (most recent call last):\n"
            '  File "/home/dd/depth/model.py", line 140, in training_step\n'
            "    feats = self.pose_net(torch.cat([img, ref], 1))\n"
            '  File "/home/dd/depth/pose_net.py", line 41, in forward\n'
            "    out = self.encoder(x)\n"
            '  File "/opt/venv/lib/python3.8/site-packages/torch/nn/modules/conv.py", line 443, in forward\n'
            "    return self._conv_forward(input, self.weight, self.bias)\n"
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and "
            "cuda:0! (when checking argument for argument weight in method wrapper_CUDA__cudnn_convolution)\n")
    result = diagnose_text(tmp_path, text, command="python train.py --gpus 2 --strategy ddp")
    assert (result.category, result.failing_rank) == ("code_bug", 1)
