"""Whole logs in the shapes other launchers write: DeepSpeed/pdsh multi-node, accelerate, Slurm srun -l."""

from __future__ import annotations

import pytest
from triage_helpers import FIXTURES

from triage import diagnose

FORMATS = FIXTURES / "formats"


@pytest.mark.parametrize(
    "name, category, rank, exception, launcher",
    [
        ("ds_multinode.log", "gpu_oom", 3, "OutOfMemoryError", "deepspeed"),
        ("accel.log", "data_schema", None, "KeyError", "accelerate"),
        ("srun.log", "cuda_error", 1, "RuntimeError", "slurm"),
        ("fsdp.log", "config_invalid", 0, "Exception", None),
        ("nccl_remote.log", "host_oom", 1, "RuntimeError", None),
    ],
)
def test_it_reads_each_launcher_format(name, category, rank, exception, launcher):
    result = diagnose([FORMATS / name])
    assert result.category == category
    assert result.failing_rank == rank
    assert result.root_cause.exception == exception
    if launcher:
        assert result.launcher == launcher


def test_it_maps_a_deepspeed_local_rank_on_the_second_node_to_its_global_rank():
    result = diagnose([FORMATS / "ds_multinode.log"])
    assert result.world_size == 4
    assert {rank.rank: rank.status for rank in result.ranks}[3] == "failed"


def test_it_treats_a_remote_nccl_error_as_a_cascade():
    result = diagnose([FORMATS / "nccl_remote.log"])
    assert {rank.rank: rank.status for rank in result.ranks}[3] == "cascade"


def test_it_reads_a_signal_death_from_a_subprocess_wrapper():
    result = diagnose([FORMATS / "died.log"])
    assert result.category == "host_oom"
    assert result.root_cause.exception is None
    assert result.fixes[0]["kind"] == "fix_config"  # killed while loading the checkpoint


def test_it_reads_a_loguru_traceback():
    result = diagnose([FORMATS / "loguru.log"])
    assert result.category == "data_schema"
    assert [frame["function"] for frame in result.root_cause.frames] == ["<module>", "main", "collate"]


def test_it_reads_the_old_torch_distributed_launch():
    result = diagnose([FORMATS / "launch_old.log"])
    assert result.category == "data_pipeline"  # an image the dataset lists is missing: its path, not the disk
    assert result.failing_rank == 1
    assert result.root_cause.message.endswith("00042.jpg'")
