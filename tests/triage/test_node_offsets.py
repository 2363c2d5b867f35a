"""A second node's local ranks are turned into global ones by its agent's failure table (triage.nodeoffsets)."""

from __future__ import annotations

from triage import diagnose
from triage.nodeoffsets import node_offsets, offset_of


def _table(host: str, entries: list[tuple[int, int, int]]) -> str:
    """The elastic agent's failure block: (global rank, local rank, exit code) per process, the first the root."""
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "=" * 60, "train.py FAILED",
             "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60, "Root Cause (first observed failure):"]
    for index, (rank, local, code) in enumerate(entries):
        lines += [f"[{index}]:", "  time      : 2026-11-20_04:11:52", f"  host      : {host}",
                  f"  rank      : {rank} (local_rank: {local})", f"  exitcode  : {code} (pid: {5100 + local})",
                  "  error_file: <N/A>", "  traceback : To enable traceback see: https://pytorch.org/docs/"]
    return "\n".join(lines + ["=" * 60]) + "\n"


CUT_SHARD = """\
[default{local}]:Traceback (most recent call last):
[default{local}]:  File "/home/ml/rerank/train.py", line 88, in <module>
[default{local}]:    rows = pq.read_table(shard)
[default{local}]:pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer. Either the file is corrupted or this is not a parquet file.
"""


def test_a_second_nodes_tee_prefixes_are_numbered_from_its_first_global_rank(tmp_path):
    node0 = tmp_path / "gpu-a.log"
    node0.write_text("[default0]:loading shard 0\n[default2]:loading shard 2\n"
                     "[default2]:RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed "
                     "by peer [10.0.0.12]:4410\n")
    node1 = tmp_path / "gpu-b.log"
    node1.write_text("[default0]:loading shard 4\n" + CUT_SHARD.format(local=2) + _table("gpu-b", [(6, 2, 1)]))
    result = diagnose([node0, node1], command="torchrun --nnodes 2 --nproc_per_node 4 train.py")
    assert result.category == "data_corrupt"
    assert result.failing_rank == 6
    assert result.root_cause.rank == 6


def test_a_log_dir_tree_under_a_host_folder_takes_that_hosts_offset(tmp_path):
    console = tmp_path / "console-gpu-b.txt"
    console.write_text(_table("gpu-b", [(5, 1, 1), (4, 0, -15)]))
    rank_dir = tmp_path / "logs" / "gpu-b" / "job_x1" / "attempt_0" / "1"
    rank_dir.mkdir(parents=True)
    (rank_dir / "stderr.log").write_text(CUT_SHARD.replace("[default{local}]:", ""))
    result = diagnose([console, tmp_path / "logs"], command="torchrun --nnodes 2 --nproc_per_node 4 train.py")
    assert (result.category, result.failing_rank) == ("data_corrupt", 5)


def test_offsets_need_agreeing_entries_and_a_node_past_the_first(tmp_path):
    (tmp_path / "b.log").write_text(_table("gpu-b", [(9, 1, 1), (8, 0, -15)]))
    (tmp_path / "a.log").write_text(_table("gpu-a", [(1, 1, 1)]))              # node 0: nothing to shift
    (tmp_path / "mixed.log").write_text(_table("gpu-c", [(9, 1, 1)]) + _table("gpu-c", [(3, 3, 1)]))
    by_source, by_host = node_offsets([tmp_path])
    assert by_source == {f"{tmp_path.name}/b.log": 8}
    assert by_host == {"gpu-b": 8}
    assert offset_of("logs/gpu-b/attempt_0/1/stderr.log", by_source, by_host) == 8
    assert offset_of("logs/gpu-a/attempt_0/1/stderr.log", by_source, by_host) is None
    # a torch "[rankN]:" prefix is already global: only "[defaultN]:" is shifted
    node1 = tmp_path / "b.log"
    node1.write_text(CUT_SHARD.replace("[default{local}]:", "[rank9]:") + _table("gpu-b", [(9, 1, 1)]))
    assert diagnose([node1]).failing_rank == 9


def test_a_collectors_lead_before_the_table_fields_is_looked_through(tmp_path):
    lead = "trainer-b-1  | "
    (tmp_path / "b.log").write_text("".join(lead + line + "\n" for line in _table("gpu-b", [(9, 1, 1)]).splitlines()))
    by_source, by_host = node_offsets([tmp_path / "b.log"])
    assert by_source == {"b.log": 8} and by_host == {"gpu-b": 8}


def test_the_log_dir_folder_an_agent_named_at_start_takes_that_nodes_offset(tmp_path):
    run = tmp_path / "runs" / "sft-7b-2210_q1w2e3r4" / "attempt_0"
    for local in range(4):
        (run / str(local)).mkdir(parents=True)
        (run / str(local) / "stdout.log").write_text(f"step 10 loss 1.{local}\n")
        (run / str(local) / "stderr.log").write_text("")
    (run / "3" / "stderr.log").write_text(
        "Traceback (most recent call last):\n  File \"/srv/sft/train.py\", line 70, in <module>\n"
        "    loss.backward()\nRuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    agent = tmp_path / "node3_agent.log"
    agent.write_text("".join(
        f"I0302 01:00:00.000000 911 torch/distributed/elastic/multiprocessing/api.py:284] Setting worker{n} reply "
        f"file to: runs/sft-7b-2210_q1w2e3r4/attempt_0/{n}/error.json\n" for n in range(4))
        + _table("trn-d", [(15, 3, 1)]))
    by_source, by_host = node_offsets([agent, tmp_path / "runs"])
    assert by_host.get("sft-7b-2210_q1w2e3r4") == 12
    assert offset_of("runs/sft-7b-2210_q1w2e3r4/attempt_0/3/stderr.log", by_source, by_host) == 12
    result = diagnose([agent, tmp_path / "runs"])
    assert result.failing_rank == 15


def test_a_per_machine_spawn_launch_numbers_its_processes_from_the_machines_first_rank(tmp_path):
    # detectron2-style launch: one `--machine-rank N --num-gpus 8` command per machine, whose processes the
    # spawn wrapper reports by their index on that machine ("Process 4" on machine 1 is global rank 12)
    lines = ["$ python tools/train_net.py --num-gpus 8 --num-machines 2 --machine-rank 1 --dist-url tcp://10.0.0.4:50152",
             "Command Line Args: Namespace(dist_url='tcp://10.0.0.4:50152', machine_rank=1, num_gpus=8, num_machines=2)",
             "Traceback (most recent call last):",
             '  File "/opt/venv/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 69, in _wrap',
             "    fn(i, *args)",
             "-- Process 4 terminated with the following error:",
             "Traceback (most recent call last):",
             '  File "/work/det/tools/train_net.py", line 120, in main',
             "    trainer.train()",
             "RuntimeError: DataLoader worker (pid 88412) is killed by signal: Bus error. It is possible that "
             "dataloader's workers are out of shared memory. Please try to raise your shared memory limit."]
    node1 = tmp_path / "node1.log"
    node1.write_text("\n".join(lines) + "\n")
    assert node_offsets([node1]) == ({"node1.log": 8}, {})
    result = diagnose([node1])
    assert (result.category, result.failing_rank) == ("dataloader_worker", 12)
