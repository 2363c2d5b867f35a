"""Fix builders: turn fix kinds chosen by the rules into concrete, pasteable fixes.

build_fixes(kinds, ctx) -> [fix dict], ranked from the evidence (ranking.py): the rules' choice
first unless the log rules it out, fixes that make the same change merged into one, fixes the log
rules out (already in place, batch already 1, workers already 0, data that parses) last with the
reason, and among the rest what the memory estimate says (fits, unknown, does not fit). Every fix
says why it stands where it does ("rank_reason") and every corrected command has passed its
check (triage.commandline.check) or is withheld. Extras for gpu_oom:
`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (kind fix_config) when the OOM message shows a
large reserved-but-unallocated share, and GPU-memory fixes the estimator says would make it fit. Never raises: a failing builder yields advice without
a command change. Extra keys per fix are documented in common.py (changes, diff, notes,
config_patch, config, shell, evidence, cost) plus "estimate" on GPU-memory fixes
({"total_gib", "fits"} after that fix) and "applicable": False when the fix is already in place.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from . import (
    batch,
    config_fixes,
    data_fixes,
    dist_fixes,
    host_fixes,
    memory_fixes,
    other_fixes,
    ranking,
    sharding,
    version_fixes,
)
from .common import evidence_text, series_capacity_gib


@dataclass
class FixContext:
    """Everything a fix builder may look at. All fields optional except category."""

    category: str
    command: str | None = None  # the failed job's launch command, as the user wrote it
    configs: dict[str, Any] = field(default_factory=dict)  # file name -> parsed JSON/YAML
    exception: str | None = None  # short class name of the root exception
    message: str | None = None  # root exception message
    evidence: list[str] = field(default_factory=list)  # evidence line texts
    rule_id: str | None = None
    world_size: int | None = None
    memory: dict | None = None  # {"series": [...], "oom": {...} or None}
    data_sample: Any = None  # parsed data sample (list/dict) or None
    facts: dict[str, Any] = field(default_factory=dict)  # extra facts a rule extracted
    frames: list[str] = field(default_factory=list)  # file paths of the root traceback's frames


BUILDERS = {
    "convert_data_format": data_fixes.convert_data_format,
    "fix_data_file": data_fixes.fix_data_file,
    "reduce_batch_size": batch.batch_change,
    "increase_grad_accum": batch.batch_change,
    "enable_gradient_checkpointing": memory_fixes.gradient_checkpointing,
    "enable_mixed_precision": memory_fixes.mixed_precision,
    "shard_more": sharding.shard_more,
    "reduce_seq_len": memory_fixes.reduce_seq_len,
    "reduce_dataloader_workers": host_fixes.reduce_workers,
    "increase_shm": host_fixes.increase_shm,
    "increase_timeout": dist_fixes.increase_timeout,
    "set_nccl_env": dist_fixes.set_nccl_env,
    "fix_rendezvous": dist_fixes.fix_rendezvous,
    "pin_versions": version_fixes.pin_versions,
    "rename_flag": version_fixes.rename_flag,
    "fix_config": config_fixes.fix_config,
    "free_disk": other_fixes.free_disk,
    "fix_path": other_fixes.fix_path,
    "fix_numerics": other_fixes.fix_numerics,
    "debug_cuda": other_fixes.debug_cuda,
    "replace_hardware": other_fixes.replace_hardware,
    "fix_code": other_fixes.fix_code,
}
GPU_MEMORY_KINDS = ("reduce_batch_size", "enable_gradient_checkpointing", "enable_mixed_precision",
                    "reduce_seq_len", "shard_more")


def build_fixes(kinds: list[str], ctx: FixContext) -> list[dict]:
    """Return CONTRACT fix dicts, in order, one or more per kind.

    Each: {"kind", "title", "why", "command", "env", "verified", ...extra keys allowed}
    """
    ctx = _normalised(ctx)
    kinds = list(dict.fromkeys(k for k in kinds or [] if isinstance(k, str)))
    estimate = _memory_estimate(ctx) if ctx.category == "gpu_oom" else None
    fixes = [_build(kind, ctx) for kind in kinds]
    if estimate:
        for fix in fixes:
            _attach_estimate(fix, estimate)
    extras = _extras(ctx, kinds, estimate)
    return ranking.rank(fixes, extras, ctx)


def _normalised(ctx: FixContext) -> FixContext:
    """A copy with odd fields made safe, and the OOM numbers parsed from the message when missing."""
    from ..memory import parse_oom

    memory = dict(ctx.memory) if isinstance(ctx.memory, dict) else {}
    if not memory.get("oom") and ctx.category == "gpu_oom":
        for text in [ctx.message, *(ctx.evidence or [])]:
            oom = parse_oom(str(text)) if text else None
            if oom:
                memory["oom"] = oom
                break
    return replace(
        ctx, command=ctx.command if isinstance(ctx.command, str) and ctx.command.strip() else None,
        configs=ctx.configs if isinstance(ctx.configs, dict) else {}, memory=memory,
        facts=ctx.facts if isinstance(ctx.facts, dict) else {},
        evidence=[str(e) for e in (ctx.evidence or []) if e is not None],
    )


def _build(kind: str, ctx: FixContext) -> dict:
    builder = BUILDERS.get(kind, other_fixes.generic)
    if kind in dist_fixes.UNEVEN_RANK_KINDS and dist_fixes.out_of_step(ctx):
        builder = dist_fixes.uneven_ranks  # one rank out of step: these fixes say how the ranks' paths differ
    try:
        fix = builder(ctx, kind)
    except Exception as exc:  # a builder bug must never cost the diagnosis its fixes
        try:
            fix = other_fixes.generic(replace(ctx, command=None), kind)
        except Exception:
            fix = {"kind": kind, "title": kind.replace("_", " "), "why": "", "command": None, "env": {}}
        fix["notes"] = [*fix.get("notes", []), f"the fix builder failed ({type(exc).__name__}); advice only"]
    if not fix.get("changes") and kind in GPU_MEMORY_KINDS + ("increase_grad_accum",) and fix.get("applicable") is not True:
        # (a builder that says so keeps a change to make in the code: nothing shows it in place)
        fix.setdefault("applicable", False)
        fix.setdefault("ruled_out", fix.get("title") or "already in place")
    fix.setdefault("verified", None)
    return fix


def _memory_estimate(ctx: FixContext) -> dict | None:
    from ..memory import estimate

    try:
        return estimate(ctx.command, ctx.configs, ctx.facts, oom=(ctx.memory or {}).get("oom"),
                        world_size=ctx.world_size, capacity_gib=series_capacity_gib(ctx), frames=ctx.frames,
                        evidence=evidence_text(ctx))
    except Exception:
        return None


def _attach_estimate(fix: dict, estimate: dict) -> None:
    if "estimate" in fix:  # the builder estimated its own change (e.g. the batch it chose)
        return
    kind = "reduce_batch_size" if fix["kind"] == "increase_grad_accum" else fix["kind"]
    after = next((a for a in estimate.get("after_fixes", []) if a["kind"] == kind), None)
    if after is not None and fix.get("applicable", True):
        fix["estimate"] = {"total_gib": after["total_gib"], "fits": after["fits"],
                           "before_gib": estimate["total_gib"], "capacity_gib": estimate["capacity_gib"]}


def _extras(ctx: FixContext, kinds: list[str], estimate: dict | None) -> list[dict]:
    extras = []
    if ctx.category != "gpu_oom":
        return extras
    oom = (ctx.memory or {}).get("oom")
    command_env = ctx.command or ""
    if memory_fixes.is_fragmented(oom) and "PYTORCH_CUDA_ALLOC_CONF" not in command_env:
        try:
            extra = memory_fixes.expandable_segments(ctx, "fix_config")
            extra["added_because"] = "the OOM message shows a large reserved-but-unallocated share"
            extras.append(extra)
        except Exception:
            pass
    for after in (estimate or {}).get("after_fixes", []):
        if after["fits"] and after["kind"] in BUILDERS and after["kind"] not in kinds:
            fix = _build(after["kind"], ctx)
            _attach_estimate(fix, estimate)
            fix.setdefault("notes", []).append("added because the memory estimate says this change makes it fit")
            fix["added_because"] = "the memory estimate says this change makes it fit"
            extras.append(fix)
    return extras
