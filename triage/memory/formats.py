"""One parser per memory-reporting format. Each returns Readings found in one log line.

Formats: nvidia-smi --query-gpu CSV (with its header) and the default nvidia-smi table,
DCGM (dcgm-exporter Prometheus lines, `dcgmi dmon` with FBUSD/FBFRE/FBTTL columns),
torch.cuda.memory_summary() tables, max_memory_allocated/reserved prints, DeepSpeed
see_memory_usage (MA/Max_MA/CA/Max_CA, CPU Virtual Memory), HF Trainer memory metrics
(train_mem_gpu_*), W&B system metrics (system.gpu.N.memoryAllocatedBytes, system.proc.memory.rssMB),
host lines (kernel oom-killer anon-rss, `free -m`, Slurm "exceeded memory limit"), the CUDA OOM message.
Known gap: `--format=csv,nounits,noheader` rows carry no literal the scan can match.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .oom import parse_oom
from .units import SIZE, to_mib


@dataclass
class Reading:
    kind: str  # gpu_used | gpu_allocated | gpu_allocated_peak | gpu_reserved | gpu_reserved_peak | host_rss | host_used
    value_mib: float
    gpu: int | None = None
    capacity_mib: float | None = None
    t: float | None = None  # a timestamp the line itself carries


@dataclass
class SourceState:
    csv_columns: list[str] | None = None
    smi_row: int = 0  # memory rows seen in the current nvidia-smi table
    summary_device: int | None = None
    dmon_columns: list[str] = field(default_factory=list)


_CSV_TIME = re.compile(r"(\d{4})/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?)")


def _csv_time(text: str) -> float | None:
    match = _CSV_TIME.search(text)
    if not match:
        return None
    y, mo, d, h, mi, s = match.groups()
    return datetime(int(y), int(mo), int(d), int(h), int(mi), tzinfo=UTC).timestamp() + float(s)


def nvidia_smi_csv(text: str, state: SourceState) -> list[Reading]:
    query = re.search(r"--query-gpu[= ]([\w.,]+)", text)
    if query:  # the nvidia-smi command itself, echoed into the log: its columns, also for noheader rows
        state.csv_columns = query.group(1).split(",")
        return []
    if "memory.used" in text or "memory.total" in text:
        state.csv_columns = [c.strip().split(" ")[0] for c in text.split(",")]
        return []
    if text.count(",") < 1 or "allocate" in text or not re.search(r"(?:^|,)\s*\d+(?:\.\d+)?\s*MiB\s*(?:,|$)", text):
        return []
    cells = [c.strip() for c in text.split(",")]
    columns = state.csv_columns or []
    if len(columns) != len(cells):  # no header seen: timestamp?, index?, used, total
        mib_cells = [c for c in cells if c.endswith("MiB")]
        columns = ["memory.used", "memory.total"][: len(mib_cells)]
        cells = mib_cells
    row = dict(zip(columns, cells, strict=False))
    gpu = int(row["index"]) if row.get("index", "").isdigit() else None
    if gpu is None:
        index = re.search(r"^\s*(?:\S+ \S+,\s*)?(\d+),", text)
        gpu = int(index.group(1)) if index else None

    def mib(key):
        found = re.match(r"(\d+(?:\.\d+)?)", row.get(key, ""))
        return float(found.group(1)) if found else None

    used, total = mib("memory.used"), mib("memory.total")
    if used is None and mib("memory.free") is not None and total is not None:
        used = total - mib("memory.free")
    return [Reading("gpu_used", used, gpu, total, _csv_time(text))] if used is not None else []


_SMI_ROW = re.compile(r"\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|")


def nvidia_smi_table(text: str, state: SourceState) -> list[Reading]:
    if "NVIDIA-SMI" in text:
        state.smi_row = 0
        return []
    match = _SMI_ROW.search(text)
    if not match:
        return []
    gpu = state.smi_row
    state.smi_row += 1
    return [Reading("gpu_used", float(match.group(1)), gpu, float(match.group(2)))]


_PROM = re.compile(r"DCGM_FI_DEV_FB_(USED|FREE|TOTAL|RESERVED)\{([^}]*)\}\s+(\d+(?:\.\d+)?)(?:\s+(\d{10,13}))?")


def dcgm(text: str, state: SourceState) -> list[Reading]:
    out = []
    for kind, labels, value, stamp in _PROM.findall(text):
        gpu = re.search(r'gpu="(\d+)"', labels)
        t = float(stamp) / (1000 if len(stamp) == 13 else 1) if stamp else None
        if kind == "USED":
            out.append(Reading("gpu_used", float(value), int(gpu.group(1)) if gpu else None, None, t))
        elif kind == "RESERVED":
            out.append(Reading("gpu_reserved", float(value), int(gpu.group(1)) if gpu else None, None, t))
    if out:
        return out
    if "FBUSD" in text:  # dcgmi dmon header: "#Entity   FBUSD   FBFRE"
        state.dmon_columns = text.replace("#", "").split()[1:]
        return []
    row = re.match(r"^\s*GPU\s+(\d+)\s+([\d.\s]+)$", text)
    if row and state.dmon_columns:
        values = dict(zip(state.dmon_columns, row.group(2).split(), strict=False))
        if "FBUSD" in values:
            total = values.get("FBTTL")
            free = values.get("FBFRE")
            capacity = float(total) if total else (float(values["FBUSD"]) + float(free) if free else None)
            return [Reading("gpu_used", float(values["FBUSD"]), int(row.group(1)), capacity)]
    return []


_SUMMARY_ROW = re.compile(rf"\|\s*(Allocated memory|GPU reserved memory)\s*\|\s*{SIZE}\s*\|\s*{SIZE}\s*\|")


def memory_summary(text: str, state: SourceState) -> list[Reading]:
    device = re.search(r"memory summary, device ID (\d+)", text)
    if device:
        state.summary_device = int(device.group(1))
        return []
    match = _SUMMARY_ROW.search(text)
    if not match:
        return []
    name, cur, cur_unit, peak, peak_unit = match.groups()
    kind = "gpu_allocated" if name == "Allocated memory" else "gpu_reserved"
    return [Reading(kind, to_mib(cur, cur_unit), state.summary_device),
            Reading(kind + "_peak", to_mib(peak, peak_unit), state.summary_device)]


_MAX_MEM = re.compile(
    r"((?:max|peak)[_ ])?(?:cuda[_ .])?memory[_ ](allocated|reserved)(?:\(\))?[^0-9\n]{0,25}?(?:\((GB|GiB|MB|MiB)\))?"
    r"[^0-9\n]{0,6}(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*(GiB|GB|MiB|MB|G|M|KiB|KB|bytes|B)?", re.I)
_DS = re.compile(r"\b(Max_MA|MA|Max_CA|CA)\s+(\d+(?:\.\d+)?)\s*GB")


def allocator_prints(text: str, state: SourceState) -> list[Reading]:
    out = []
    for name, value in _DS.findall(text):  # DeepSpeed see_memory_usage: GB there means GiB
        kind = {"MA": "gpu_allocated", "Max_MA": "gpu_allocated_peak", "CA": "gpu_reserved",
                "Max_CA": "gpu_reserved_peak"}[name]
        out.append(Reading(kind, float(value) * 1024))
    if out:
        return out
    for peak, what, unit_before, number, unit_after in _MAX_MEM.findall(text):
        unit = unit_after or unit_before
        value = float(number)
        if not unit:
            if value < 1e5:  # a bare small number is not bytes; skip rather than guess
                continue
            unit = "B"
        if unit.upper() in ("GB", "MB"):  # torch users print x / 1024**3 and call it GB
            unit = unit[0] + "iB"
        mib = to_mib(value, unit)
        kind = ("gpu_allocated" if what.lower() == "allocated" else "gpu_reserved") + ("_peak" if peak else "")
        if mib is not None:
            out.append(Reading(kind, mib))
    return out


_HF = re.compile(r"(\w+)_mem_(gpu|cpu)_(alloc_delta|peaked_delta)\s*[=:]\s*(\d+(?:\.\d+)?)\s*(MB|GB|B)?")
_WANDB = re.compile(r'"system\.(?:gpu\.(\d+)\.memoryAllocatedBytes|proc\.memory\.rssMB)"\s*:\s*([\d.eE+]+)')


def metrics_lines(text: str, state: SourceState) -> list[Reading]:
    out = []
    stamp = re.search(r'"_timestamp"\s*:\s*([\d.]+)', text)
    t = float(stamp.group(1)) if stamp else None
    for gpu, value in _WANDB.findall(text):
        if gpu:
            out.append(Reading("gpu_used", float(value) / 2**20, int(gpu), None, t))
        else:
            out.append(Reading("host_rss", float(value), None, None, t))
    for _stage, device, what, value, unit in _HF.findall(text):
        kind = ("gpu" if device == "gpu" else "host") + ("_peak_delta" if what == "peaked_delta" else "_alloc_delta")
        out.append(Reading(kind, float(value) * (1024 if unit == "GB" else 1 / 2**20 if unit == "B" else 1)))
    return out


def host_lines(text: str, state: SourceState) -> list[Reading]:
    killed = re.search(r"Killed process \d+ \(([^)]*)\).*?anon-rss:(\d+)kB", text)
    if killed:
        return [Reading("host_rss", int(killed.group(2)) / 1024)]
    free = re.match(r"^\s*Mem:\s+(\d+)\s+(\d+)\s", text)
    if free:  # free -m
        return [Reading("host_used", float(free.group(2)), None, float(free.group(1)))]
    slurm = re.search(r"exceeded memory limit \((\d+) > (\d+)\)", text)
    if slurm:
        return [Reading("host_rss", int(slurm.group(1)) / 1024, None, int(slurm.group(2)) / 1024)]
    virtual = re.search(r"CPU Virtual Memory:\s+used = (\d+(?:\.\d+)?) GB", text)
    if virtual:
        return [Reading("host_used", float(virtual.group(1)) * 1024)]
    return []


def oom_message(text: str, state: SourceState) -> list[Reading]:
    oom = parse_oom(text)
    if not oom or oom.get("capacity_mib") is None or oom.get("free_mib") is None:
        return []
    used = oom["capacity_mib"] - oom["free_mib"]
    return [Reading("gpu_used", round(used, 3), oom.get("gpu"), oom["capacity_mib"])]


PARSERS = (oom_message, nvidia_smi_csv, nvidia_smi_table, dcgm, memory_summary, allocator_prints,
           metrics_lines, host_lines)
