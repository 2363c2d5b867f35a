"""Memory series come out of every format a training log carries them in."""
from pathlib import Path

import pytest

from triage.memory import MemorySeriesCollector
from triage.memory.downsample import downsample

FIXTURES = Path(__file__).parent / "fixtures" / "memory"


def collect(name, rank=None, with_time=False):
    """Feed a fixture the way the engine's scan does: only lines holding one of LITERALS."""
    collector = MemorySeriesCollector()
    for lineno, line in enumerate((FIXTURES / name).read_text().splitlines(), 1):
        if any(literal in line for literal in collector.LITERALS):
            collector.feed(name, rank, lineno, line, float(lineno) * 10 if with_time else None)
    return collector.result()


def series(result, kind, gpu=None):
    found = [s for s in result["series"] if s["kind"] == kind and s["gpu"] == gpu]
    assert len(found) == 1, [(s["kind"], s["gpu"]) for s in result["series"]]
    return found[0]


def values(one):
    return [value for _, value in one["points"]]


def test_it_reads_nvidia_smi_query_csv_per_gpu_with_its_timestamps():
    result = collect("nvidia_smi_query.csv")
    gpu0, gpu1 = series(result, "gpu_used", 0), series(result, "gpu_used", 1)
    assert values(gpu0) == [1021, 41234, 79811] and values(gpu1) == [1019, 40950, 78002]
    assert gpu0["capacity"] == 81920 and gpu0["unit"] == "MiB" and gpu0["x"] == "time"
    # 2024/05/14 09:31:02.118 UTC
    assert gpu0["points"][0][0] == pytest.approx(1715679062.118)


def test_it_reads_the_default_nvidia_smi_table_and_skips_process_rows():
    result = collect("nvidia_smi_table.txt")
    assert values(series(result, "gpu_used", 0)) == [38012, 40310]
    assert values(series(result, "gpu_used", 1)) == [36500, 36900]
    assert series(result, "gpu_used", 1)["capacity"] == 40960
    assert len(result["series"]) == 2


def test_it_reads_dcgm_exporter_and_dcgmi_dmon():
    exporter = collect("dcgm_exporter.txt")
    assert series(exporter, "gpu_used", 0)["points"] == [[1715679072.0, 61234.0], [1715679082.0, 80012.0]]
    assert values(series(exporter, "gpu_used", 1)) == [60112]
    dmon = collect("dcgmi_dmon.txt")
    gpu0 = series(dmon, "gpu_used", 0)
    assert values(gpu0) == [30512, 79800]
    assert gpu0["capacity"] == 30512 + 51047  # used + free


def test_it_reads_torch_memory_summary_tables():
    result = collect("memory_summary.txt", rank=0)
    assert values(series(result, "gpu_allocated", 0)) == [20961]
    assert values(series(result, "gpu_allocated_peak", 0)) == [22503]
    assert values(series(result, "gpu_reserved", 0)) == [23040]
    assert all(s["rank"] == 0 for s in result["series"])


def test_it_reads_max_memory_allocated_prints_in_any_unit():
    result = collect("max_memory_prints.txt")
    assert values(series(result, "gpu_allocated_peak")) == pytest.approx(
        [21.37 * 1024, 22.91 * 1024, 24602034176 / 2**20, 23.10 * 1024, 24100.5], rel=1e-3
    )
    assert values(series(result, "gpu_reserved")) == [25 * 1024]


def test_it_reads_deepspeed_see_memory_usage_and_host_memory():
    result = collect("deepspeed_see_memory.txt")
    assert values(series(result, "gpu_allocated")) == pytest.approx([12.55 * 1024, 37.65 * 1024])
    assert values(series(result, "gpu_reserved_peak")) == pytest.approx([13 * 1024, 51 * 1024])
    assert values(series(result, "host_used")) == pytest.approx([70.29 * 1024])


def test_it_reads_hf_trainer_and_wandb_system_metrics():
    trainer = collect("hf_trainer_metrics.txt")
    assert values(series(trainer, "gpu_peak_delta")) == [20454]
    assert values(series(trainer, "host_alloc_delta")) == [1951]
    wandb = collect("wandb_system.jsonl")
    gpu1 = series(wandb, "gpu_used", 1)
    assert gpu1["points"] == [[1715679072.5, pytest.approx(41659.875)], [1715679102.5, pytest.approx(79167.02, 1e-6)]]
    assert values(series(wandb, "host_rss")) == [9123.5, 12011.25]


def test_it_reads_host_oom_killer_free_and_slurm_lines():
    result = collect("host_memory.txt")
    assert values(series(result, "host_rss")) == [201326592 / 1024, 268435456 / 1024]
    used = series(result, "host_used")
    assert values(used) == [498123] and used["capacity"] == 515896
    assert result["oom"] is None  # "Out of memory: Killed process" is the kernel, not CUDA


def test_it_parses_the_current_oom_message():
    result = collect("oom_new.txt", rank=1)
    oom = result["oom"]
    assert oom["rank"] == 1 and oom["gpu"] == 1 and oom["source"] == "oom_new.txt"
    assert oom["tried_mib"] == 2048
    assert oom["capacity_mib"] == pytest.approx(79.15 * 1024)
    assert oom["free_mib"] == pytest.approx(1.02 * 1024)
    assert oom["allocated_mib"] == pytest.approx(71.30 * 1024)
    assert oom["reserved_unallocated_mib"] == pytest.approx(6.10 * 1024)
    assert "Tried to allocate 2.00 GiB" in oom["line"]
    assert values(series(result, "gpu_used", 1)) == [pytest.approx((79.15 - 1.02) * 1024)]


def test_it_parses_the_older_oom_message():
    oom = collect("oom_old.txt")["oom"]
    assert oom["tried_mib"] == 688 and oom["gpu"] == 1
    assert oom["capacity_mib"] == pytest.approx(39.39 * 1024)
    assert oom["free_mib"] == pytest.approx(633.12)
    # reserved in total (38.19 GiB) - already allocated (37.95 GiB)
    assert oom["reserved_unallocated_mib"] == pytest.approx(0.24 * 1024)


def test_it_ignores_progress_bars_and_loss_lines():
    collector = MemorySeriesCollector()
    lines = (FIXTURES / "progress_noise.txt").read_text().splitlines()
    literals = [literal.lower() for literal in collector.LITERALS]  # the engine matches case-insensitively
    assert not [line for line in lines if any(literal in line.lower() for literal in literals)]


def test_it_makes_no_series_from_lines_that_only_mention_memory():
    collector = MemorySeriesCollector()
    for lineno, line in enumerate([
        "model = AutoModelForCausalLM.from_pretrained(name, device_map='auto', max_memory={0: '20GiB'})",
        "If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.",
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5a1c6c1e)",
        "Using 8 GPUs, total 640 GiB of memory",
    ], 1):
        collector.feed("log.txt", 0, lineno, line, None)
    assert collector.result() == {"series": [], "oom": None}


def test_it_uses_the_engines_time_when_lines_carry_none():
    result = collect("nvidia_smi_table.txt", with_time=True)
    assert series(result, "gpu_used", 0)["x"] == "time"
    assert [t for t, _ in series(result, "gpu_used", 0)["points"]] == [100.0, 310.0]


def test_it_survives_huge_and_odd_lines():
    collector = MemorySeriesCollector()
    collector.feed("x", 0, 1, "MiB " * 200_000, None)
    collector.feed("x", 0, 2, "\x00GPU \udcff memory_allocated: nan GiB", None)
    assert collector.result()["series"] == []


def test_it_downsamples_to_the_limit_keeping_the_extremes():
    points = [[i, float(i % 1000)] for i in range(20_000)]
    points[12_345][1] = 99_999.0
    points[777][1] = -5.0
    small = downsample(points, 5000)
    assert len(small) <= 5000
    assert max(v for _, v in small) == 99_999.0 and min(v for _, v in small) == -5.0
    assert [t for t, _ in small] == sorted(t for t, _ in small)


def test_it_downsamples_long_series_in_the_result():
    collector = MemorySeriesCollector()
    for i in range(12_000):
        collector.feed("smi.csv", 0, i, f"2024/05/14 09:31:02.118, 0, {1000 + i % 7} MiB, 81920 MiB", float(i))
    (one,) = collector.result(max_points=5000)["series"]
    assert len(one["points"]) <= 5000 and max(values(one)) == 1006 and min(values(one)) == 1000


def test_it_takes_csv_columns_from_an_echoed_nvidia_smi_command():
    collector = MemorySeriesCollector()
    lines = ["+ nvidia-smi --query-gpu=index,memory.total,memory.used --format=csv,noheader -l 5",
             "0, 40960 MiB, 12000 MiB", "1, 40960 MiB, 13000 MiB"]
    for lineno, line in enumerate(lines, 1):
        collector.feed("smi.log", None, lineno, line, None)
    result = collector.result()
    assert values(series(result, "gpu_used", 1)) == [13000]  # memory.used is the third column here
    assert series(result, "gpu_used", 0)["capacity"] == 40960
