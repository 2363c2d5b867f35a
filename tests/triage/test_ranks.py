"""Rank attribution from every prefix style and from per-rank files."""

from __future__ import annotations

from pathlib import Path

import pytest
from triage_helpers import write

from triage import diagnose
from triage.ranks import split_prefix


@pytest.mark.parametrize(
    "line, rank, host",
    [
        ("[rank3]: KeyError: 'x'", 3, None),
        ("[default3]:KeyError: 'x'", 3, None),
        ("[default3]:[rank3]: KeyError: 'x'", 3, None),
        ("  3: KeyError: 'x'", 3, None),
        ("[1,3]<stderr>:KeyError: 'x'", 3, None),
        ("worker-2: [rank3]: KeyError: 'x'", 3, "worker-2"),
        ("10.0.0.12: KeyError: 'x'", None, "10.0.0.12"),
        ("[rank: 3] KeyError: 'x'", 3, None),
        ("Rank 3: KeyError: 'x'", 3, None),
        ("[Rank 3] KeyError: 'x'", 3, None),
        ("rank3: KeyError: 'x'", 3, None),
        ("KeyError: 'x'", None, None),
    ],
)
def test_it_reads_each_prefix_style(line, rank, host):
    parsed = split_prefix(line)
    assert parsed.rank == rank
    assert parsed.host == host
    assert parsed.text.startswith("KeyError")


def test_it_does_not_take_a_timestamp_or_exception_for_a_prefix():
    assert split_prefix("2024-01-01 10:00:00: started").rank is None
    assert split_prefix("rank 0 tried to reach rank 1").rank is None
    assert split_prefix("ranked: 3 candidates").rank is None
    assert split_prefix("RuntimeError: boom").host is None


def test_it_finds_a_rank_prefix_after_an_unterminated_progress_bar():
    parsed = split_prefix(" 1%|▏ | 24/1752 [01:08<1:22:56,  2.88s/it][rank5]:[E602 11:17:52.185] boom")
    assert parsed.rank == 5


@pytest.mark.parametrize(
    "prefix", ["[rank{r}]: ", "[default{r}]:", "{r}: ", "[1,{r}]<stdout>:", "[rank: {r}] ", "Rank {r}: "]
)
def test_it_attributes_the_failure_to_the_prefixed_rank(tmp_path, prefix):
    lines = [
        prefix.format(r=0) + "step 10 ok",
        prefix.format(r=2) + "Traceback (most recent call last):",
        prefix.format(r=2) + '  File "/w/t.py", line 4, in __getitem__',
        prefix.format(r=0) + "step 11 ok",
        prefix.format(r=2) + "KeyError: 'messages'",
    ]
    result = diagnose([write(tmp_path / "mixed.log", "\n".join(lines) + "\n")])
    assert result.failing_rank == 2
    assert result.category == "data_schema"


def test_it_maps_local_rank_files_of_a_log_dir_tree(tmp_path):
    root = tmp_path / "logs" / "run_x" / "attempt_0"
    write(root / "0" / "stderr.log", "[W] nothing\n")
    write(
        root / "1" / "stderr.log",
        'Traceback (most recent call last):\n  File "/w/t.py", line 1, in f\n'
        "OSError: [Errno 28] No space left on device\n",
    )
    result = diagnose([tmp_path / "logs"])
    assert result.failing_rank == 1
    assert result.category == "storage"


def test_it_reads_rank_from_per_rank_file_names(tmp_path):
    write(tmp_path / "node0_rank0.log", "ok\n")
    write(
        tmp_path / "node0_rank5.log",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB\n",
    )
    result = diagnose([tmp_path / "node0_rank0.log", tmp_path / "node0_rank5.log"])
    assert result.failing_rank == 5


def test_it_uses_the_launcher_to_attribute_unprefixed_tracebacks(tmp_path):
    log = write(
        tmp_path / "u.log",
        (
            "Traceback (most recent call last):\n"
            '  File "/w/train.py", line 210, in __getitem__\n'
            '    data = [e["conversations"] for e in sources]\n'
            "KeyError: 'conversations'\n"
            "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 71411 closing signal SIGTERM\n"
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 71412) of "
            "binary: /usr/bin/python\n"
        ),
    )
    result = diagnose([log])
    assert result.failing_rank == 1
    assert result.launcher == "torchrun"


def test_it_peels_stacked_prefixes():
    parsed = split_prefix("3: [rank3]: KeyError: 'x'")
    assert (parsed.rank, parsed.text) == (3, "KeyError: 'x'")
    parsed = split_prefix("node-2: [default5]:[rank5]: KeyError: 'x'")
    assert (parsed.rank, parsed.host, parsed.text) == (5, "node-2", "KeyError: 'x'")


def test_mpiruns_first_failed_process_names_the_rank(tmp_path):
    from triage import diagnose

    log = tmp_path / "mpirun.log"
    log.write_text(
        "[1,1]<stderr>:W horovod/common/operations.cc:1108] Horovod has been shut down by another rank.\n"
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n"
        "\n"
        "  Process name: [[5150,1],2]\n"
        "  Exit code:    1\n"
    )
    result = diagnose([log]).to_dict()
    assert result["failing_rank"] == 2
    assert result["launcher"] == "mpirun"


def test_stored_lines_are_read_with_the_same_rank_grammar():
    from triage.ranks import rank_in_line, rank_line_pattern, strip_rank_prefixes

    assert rank_in_line("[default1]:[rank3]: KeyError: 'x'") == 1
    assert rank_in_line("[1,5]<stderr>: boom") == 5
    assert rank_in_line("  7: Traceback (most recent call last):") == 7
    assert rank_in_line("step 12: loss 0.3") is None
    assert strip_rank_prefixes("[rank2]: ValueError: bad") == " ValueError: bad"
    of_two = rank_line_pattern(2)
    assert of_two.search("[rank2]: x") and of_two.search("2: x") and of_two.search("[1,2]<stdout>: x")
    assert not of_two.search("[rank12]: x") and not of_two.search("step 2: x")


def test_a_spawned_child_killed_by_a_signal_is_that_rank(tmp_path):
    from triage import diagnose

    log = tmp_path / "spawn.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 170, in join\n'
        "    raise ProcessExitedException(\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal SIGKILL\n"
    )
    result = diagnose([log]).to_dict()
    assert (result["category"], result["failing_rank"]) == ("host_oom", 3)


def test_the_kernels_oom_victim_is_found_by_the_pid_the_launcher_spawned(tmp_path):
    from triage import diagnose

    log = tmp_path / "ds.log"
    log.write_text(
        "[2026-01-02 08:00:00,001] [INFO] [launch.py:256:main] process 4100 spawned with command: "
        "['python3', '-u', 'train.py', '--local_rank=0']\n"
        "[2026-01-02 08:00:00,002] [INFO] [launch.py:256:main] process 4101 spawned with command: "
        "['python3', '-u', 'train.py', '--local_rank=1']\n"
        "[Fri Jan  2 08:05:00 2026] Out of memory: Killed process 4100 (python3) total-vm:1kB\n"
        "[2026-01-02 08:05:01,000] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 4101\n"
        "[2026-01-02 08:05:01,000] [ERROR] [launch.py:325:sigkill_handler] ['python3', '-u', 'train.py', "
        "'--local_rank=1'] exits with return code = -9\n"
    )
    result = diagnose([log]).to_dict()
    assert (result["category"], result["failing_rank"]) == ("host_oom", 0)


@pytest.mark.parametrize(
    "prefix",
    [
        "2024-05-01 12:00:01,001 [RANK {r}] ERROR ",
        "[2024-05-01 12:00:00] rank={r} | ",
        "INFO 2024-05-01 12:00:00 rank{r}: ",
    ],
)
def test_a_rank_a_logger_printed_among_its_decorations_is_that_rank(tmp_path, prefix):
    lines = [
        prefix.format(r=0) + "step 10 loss 1.22",
        prefix.format(r=2) + "Traceback (most recent call last):",
        prefix.format(r=2) + '  File "/srv/t.py", line 10, in <module>',
        prefix.format(r=2) + "    main()",
        prefix.format(r=2) + "ZeroDivisionError: division by zero",
    ]
    result = diagnose([write(tmp_path / "run.log", "\n".join(lines) + "\n")])
    assert result.failing_rank == 2
    assert result.root_cause.exception == "ZeroDivisionError"


def test_a_launcher_killing_children_after_an_ordinary_exit_is_not_a_memory_kill(tmp_path):
    """DeepSpeed kills the other children after one exits with code 1: that child raised a Python
    error the excerpt does not hold, so nothing here says host memory."""
    lines = [
        "[2024-05-01 12:00:00,000] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4411",
        "[2024-05-01 12:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', "
        "'train.py', '--local_rank=3', '--deepspeed', 'ds.json'] exits with return code = 1",
    ]
    result = diagnose([write(tmp_path / "run.log", "\n".join(lines) + "\n")])
    assert result.category != "host_oom"
    assert result.failing_rank == 3
    killed = diagnose([write(tmp_path / "killed.log", "\n".join(lines).replace("code = 1", "code = -9") + "\n")])
    assert killed.category == "host_oom"


def test_a_supervisors_per_rank_output_blocks_name_the_rank(tmp_path):
    """Launchers that dump each child's output after the job ("Begin global rank N STDERR") and report
    exits by global rank: the traceback inside rank 4's block is rank 4's."""
    lines = [
        "ERROR:composer.cli.launcher:Rank 4 crashed with exit code 1.",
        "Global rank 4 (PID 3304) exited with code 1",
        "----------Begin global rank 4 STDERR----------",
        "Traceback (most recent call last):",
        '  File "/srv/train.py", line 30, in <module>',
        "    main()",
        "ZeroDivisionError: division by zero",
        "----------End global rank 4 STDERR----------",
        "Global rank 0 (PID 3300) exited with code -15",
        "Traceback (most recent call last):",
        '  File "/opt/launcher.py", line 9, in <module>',
        "    sys.exit(main())",
        "RuntimeError: one or more processes failed",
    ]
    result = diagnose([write(tmp_path / "run.log", "\n".join(lines) + "\n")])
    assert result.failing_rank == 4
    assert result.root_cause.exception == "ZeroDivisionError"


def test_deepspeeds_last_spawned_command_does_not_overrule_a_ranks_own_error(tmp_path):
    """DeepSpeed's launcher prints the LAST spawned command ('--local_rank=7') beside the return code of
    whichever child ended: rank 0's own PermissionError decides; pdsh's 'ssh exited' is a consequence."""
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/usr/lib/python3.10/os.py", line 225, in makedirs',
        "[rank0]:     mkdir(name, mode)",
        "[rank0]: PermissionError: [Errno 13] Permission denied: '/mnt/share/ckpt/checkpoint-500'",
        "[2026-12-01 02:41:14,902] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 90011",
        "[2026-12-01 02:41:15,330] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', "
        "'train.py', '--local_rank=7'] exits with return code = 1",
        "pdsh@node-a: node-a: ssh exited with exit code 1",
    ]
    result = diagnose([write(tmp_path / "run.log", "\n".join(lines) + "\n")])
    assert (result.category, result.failing_rank) == ("storage", 0)


def test_a_second_nodes_local_rank_is_named_globally_by_its_root_cause_block(tmp_path):
    """Node 1's agent logs 'failed (exitcode: -9) local_rank: 0 (pid: P)' and then a Root Cause block
    'rank: 1 (local_rank: 0)' for the same pid: the SIGKILLed process is global rank 1, not 0."""
    node1 = "\n".join(
        [
            "E1201 11:40:05.214000 20905 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
            "(exitcode: -9) local_rank: 0 (pid: 20915) of binary: /usr/bin/python3",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "============================================================",
            "train.py FAILED",
            "------------------------------------------------------------",
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2026-12-01_11:40:05",
            "  host      : node-b",
            "  rank      : 1 (local_rank: 0)",
            "  exitcode  : -9 (pid: 20915)  (SIGKILL)",
            "  error_file: <N/A>",
            "  traceback : Signal 9 (SIGKILL) received by PID 20915",
            "============================================================",
        ]
    )
    node0 = "[rank0]: RuntimeError: Connection closed by peer [10.0.0.2]:45677\n"
    result = diagnose([write(tmp_path / "node0.log", node0), write(tmp_path / "node1.log", node1 + "\n")])
    assert (result.category, result.failing_rank) == ("host_oom", 1)


def test_a_later_files_loading_lines_do_not_undo_the_training_another_file_reached(tmp_path):
    node0 = "\n".join(["Loading weights: 100%|#####| 21/21 [00:00<00:00, 300.1it/s]",
                       " 50%|#####     | 3/6 [00:00<00:00,  5.99it/s]",
                       "[rank0]: RuntimeError: Connection closed by peer [10.0.0.2]:45677"])
    node1 = "\n".join(["Loading weights: 100%|#####| 21/21 [00:00<00:00, 300.1it/s]",
                       "E1201 11:40:05.214000 20905 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
                       "(exitcode: -9) local_rank: 0 (pid: 20915) of binary: /usr/bin/python3"])
    result = diagnose([write(tmp_path / "node0.log", node0 + "\n"), write(tmp_path / "node1.log", node1 + "\n")])
    assert result.fixes[0]["kind"] == "reduce_batch_size"  # training's advice, not loading's (fix_config)


def test_the_rank_whose_watchdog_names_another_collective_fell_out_of_step(tmp_path):
    def watchdog(rank, seq):
        return (f"[rank{rank}]:[E1201 10:30:00.000000 100 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
                f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")

    lines = [watchdog(0, 1234), watchdog(1, 1234), watchdog(2, 1233), watchdog(3, 1234)]
    result = diagnose([write(tmp_path / "run.log", "\n".join(lines) + "\n")], command="torchrun --nproc_per_node 4 t.py")
    assert (result.category, result.failing_rank) == ("nccl_timeout", 2)
    same = [watchdog(rank, 1234) for rank in range(4)]
    result = diagnose([write(tmp_path / "same.log", "\n".join(same) + "\n")], command="torchrun --nproc_per_node 4 t.py")
    assert result.failing_rank is None


def test_node_zero_waiting_at_the_store_yields_to_what_the_missing_node_printed(tmp_path):
    node0 = "\n".join([
        "Traceback (most recent call last):",
        '  File "/opt/py/site-packages/torch/distributed/rendezvous.py", line 200, in _create_c10d_store',
        "    return TCPStore(host, port, world_size, is_master, timeout)",
        "torch.distributed.DistStoreError: Timed out after 31 seconds waiting for clients. 1/2 clients joined.",
    ])
    node1 = "\n".join([
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "/srv/job/train.py", line 4, in <module>',
        "[rank2]:     from torch._six import inf",
        "[rank2]: ModuleNotFoundError: No module named 'torch._six'",
    ])
    result = diagnose([write(tmp_path / "node0.log", node0 + "\n"), write(tmp_path / "node1.log", node1 + "\n")])
    assert (result.category, result.root_cause.exception, result.failing_rank) == (
        "version_mismatch", "ModuleNotFoundError", 2)


def test_a_rank_that_lost_a_peer_is_no_straggler(tmp_path):
    """Ranks 0 and 2 time out, rank 1 only sees its peer close: rank 3, which printed nothing, stalled."""
    lines = [
        "[rank0]: RuntimeError: [../gloo/transport/tcp/unbound_buffer.cc:129] Timed out waiting 15000ms for recv operation to complete",
        "[rank2]: RuntimeError: [../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 15000ms for send operation to complete",
        "[rank1]: RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:60628",
    ]
    result = diagnose([write(tmp_path / "run.log", "\n".join(lines) + "\n")], command="torchrun --nproc_per_node 4 t.py")
    assert (result.category, result.failing_rank) == ("nccl_timeout", 3)


def test_horovod_and_mpirun_tag_prefixes_name_the_rank():
    from triage.ranks import split_prefix
    assert split_prefix("[3]<stderr>:ImportError: x").rank == 3
    assert split_prefix("[1,5]<stdout>:step 4").rank == 5


def test_a_host_name_before_a_rank_tag_does_not_hide_the_traceback(tmp_path):
    from triage import diagnose
    lines = ['Traceback (most recent call last):', '  File "/app/loop.py", line 9, in run',
             '    guard(loss)', 'FloatingPointError: loss is nan at step 88']
    log = tmp_path / "run.log"
    log.write_text("".join(f"2025-03-02T10:00:01Z node-b7 [r6] {line}\n" for line in lines))
    result = diagnose([log])
    assert (result.category, result.root_cause.exception) == ("numerical", "FloatingPointError")


def test_an_error_line_interleaved_into_another_streams_traceback_is_still_read(tmp_path):
    from triage import diagnose
    text = ("Traceback (most recent call last):\n"
            '  File "/job/train.py", line 4, in <module>\n'
            "    import fastkit.ops\n"
            '  File "/env/lib/python3.10/site-packages/fastkit/ops.py", line 2, in <module>\n'
            "    from fastkit import _kernels\n"
            "worker-2 ImportError: /env/lib/python3.10/site-packages/fastkit/_kernels.so: undefined symbol: _ZN3c104cuda9SetDevice\n"
            '  File "/env/lib/python3.10/site-packages/fastkit/__init__.py", line 9, in <module>\n'
            "    from .core import run\n")
    log = tmp_path / "log.txt"
    log.write_text(text)
    assert diagnose([log]).category == "version_mismatch"


def test_a_per_process_file_name_names_the_rank():
    from triage.sources import make_source
    assert make_source("user_logs/std_log_process_3.txt", None).rank_hint == 3
    assert make_source("logs/rank-12.log", None).rank_hint == 12


def test_a_logger_rank_of_world_and_pals_exit_lines_name_the_rank(tmp_path):
    from triage.ranks import split_prefix
    assert split_prefix("[rank 13/16] step 400 | loss 0.07").rank == 13
    log = tmp_path / "job.e123"
    log.write_text(
        "[Tue Nov 25 02:34:50 2026] NVRM: Xid (PCI:0000:c7:00): 79, pid=0, GPU has fallen off the bus.\n"
        "Traceback (most recent call last):\n"
        '  File "/proj/vit/train.py", line 88, in step\n'
        "    loss.backward()\n"
        "RuntimeError: CUDA error: unspecified launch failure\n"
        "x1001c0s2b0n0: rank 9 exited with code 1\n"
        "x1001c0s2b0n0: rank 8 died from signal 15\n")
    result = diagnose([log])
    assert (result.category, result.failing_rank, result.root_cause.exception) == ("hardware", 9, "RuntimeError")


def test_ray_trains_worker_table_turns_the_pid_an_error_names_into_its_rank(tmp_path):
    log = tmp_path / "driver.log"
    log.write_text(
        "(TorchTrainer pid=501) - (node_id=aa11, ip=10.0.0.5, pid=611) world_rank=0, local_rank=0, node_rank=0\n"
        "(TorchTrainer pid=501) - (node_id=bb22, ip=10.0.0.9, pid=733) world_rank=1, local_rank=0, node_rank=1\n"
        "(TorchTrainer pid=501) - (node_id=bb22, ip=10.0.0.9, pid=734) world_rank=2, local_rank=1, node_rank=1\n"
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::_RayTrainWorker__execute.get_next() (pid=734, ip=10.0.0.9)\n"
        "Traceback (most recent call last):\n"
        '  File "/job/fit.py", line 40, in loop\n'
        "    loss.backward()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
        "23.6 GiB of which 1.1 GiB is free. Process 734 has 22.4 GiB memory in use.\n")
    result = diagnose([log])
    assert (result.category, result.failing_rank) == ("gpu_oom", 2)


def test_rays_unhandled_error_line_names_the_actor_whose_rank_its_own_lines_carried(tmp_path):
    log = tmp_path / "driver.log"
    actors = "".join(f"(WorkerDict pid={7100 + r}) [rank{r}]:[W] ProcessGroupNCCL using GPU {r}\n" for r in range(4))
    log.write_text(
        actors
        + "2026-03-01 10:00:00,001\tERROR worker.py:421 -- Unhandled error (suppress with "
        "'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::WorkerDict.update_actor() (pid=7102, ip=10.0.0.4, "
        "actor_id=ab12)\n"
        '  File "/opt/rl/workers/actor.py", line 171, in forward_micro_batch\n'
        "    logits.div_(temperature)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.50 GiB. GPU 0 has a total capacity of "
        "79.2 GiB of which 3.1 GiB is free.\n")
    result = diagnose([log])
    assert (result.category, result.failing_rank) == ("gpu_oom", 2)


def test_the_kernels_oom_killer_names_a_ray_workers_pid_and_the_worker_table_its_rank(tmp_path):
    (tmp_path / "driver.log").write_text(
        "".join(f"(TorchTrainer pid=300) - (node_id=ab, ip=10.0.0.{5 + r // 2}, pid={900 + r}) world_rank={r}, "
                f"local_rank={r % 2}, node_rank={r // 2}\n" for r in range(4))
        + "(raylet, ip=10.0.0.6) A worker died or was killed while executing a task by an unexpected system error.\n")
    (tmp_path / "dmesg-node1.txt").write_text(
        "[Tue Sep  3 00:52:27 2024] python invoked oom-killer: gfp_mask=0x140dca, order=0, oom_score_adj=0\n"
        "[Tue Sep  3 00:52:27 2024] Out of memory: Killed process 903 (ray::RayTrainW) total-vm:9822031kB, "
        "anon-rss:9193011kB\n")
    result = diagnose([tmp_path / "driver.log", tmp_path / "dmesg-node1.txt"])
    assert (result.category, result.failing_rank) == ("host_oom", 3)


def test_a_rankless_c10d_line_takes_the_exception_its_own_file_raised():
    # a real run (blind set 5): node 1's c10d socket lines come before the DistNetworkError it raised
    case = Path(__file__).resolve().parents[1] / "fixtures" / "cpu_blind5" / "spawn-node1-master-addr-typo"
    result = diagnose([case / "node0.log", case / "node1.log"])
    assert (result.category, result.root_cause.exception) == ("rendezvous", "DistNetworkError")


def test_two_nodes_files_failing_in_the_same_second_name_the_lower_rank(tmp_path):
    line = "2026-05-06 10:00:01 [rank{r}]: safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge\n"
    (tmp_path / "a-node1.log").write_text(line.format(r=3))
    (tmp_path / "b-node0.log").write_text(line.format(r=1))
    assert diagnose([tmp_path / "a-node1.log", tmp_path / "b-node0.log"]).failing_rank == 1
    (tmp_path / "one.log").write_text(line.format(r=3) + line.format(r=1))  # one stream: its order stands
    assert diagnose([tmp_path / "one.log"]).failing_rank == 3
