"""Cut the per-device batch and raise gradient accumulation so the global batch stays equal.

global batch = per_device_train_batch_size x gradient_accumulation_steps x world size
The new per-device batch is a divisor of the old one, so the accumulation grows by a whole factor
and the product is unchanged: 8 x 4 x 8 = 4 x 8 x 8 = 256.
"""
from __future__ import annotations

from dataclasses import replace

from ..commandline import parse_command
from .common import (
    Edits,
    as_int,
    deepspeed_config,
    evidence_text,
    job_world_size,
    lookup,
    script_section_setting,
    series_capacity_gib,
    verify,
)

BATCH_KEYS = ("per_device_train_batch_size", "micro_batch_size", "per_gpu_train_batch_size",
              "train_micro_batch_size_per_gpu", "batch_size", "train_batch_size", "bs", "batch", "micro_batch",
              "per_device_batch_size")
ACCUM_KEYS = ("gradient_accumulation_steps", "gradient_accumulation", "grad_accum", "grad_accum_steps",
              "accumulate_grad_batches")


def plan_batch(batch: int, accumulation: int, target: int | None = None) -> tuple[int, int]:
    """(new batch, new accumulation) with new_batch x new_accumulation == batch x accumulation.

    new batch = the largest divisor of `batch` that is <= target (default batch // 2)."""
    batch, accumulation = max(int(batch), 1), max(int(accumulation), 1)
    if batch == 1:
        return 1, accumulation
    limit = max(1, min(target if target else batch // 2, batch - 1))
    new_batch = next(d for d in range(limit, 0, -1) if batch % d == 0)
    return new_batch, accumulation * (batch // new_batch)


def _estimate(ctx, batch: int) -> dict | None:
    from ..memory import estimate

    return estimate(ctx.command, ctx.configs, ctx.facts, oom=(ctx.memory or {}).get("oom"),
                    world_size=ctx.world_size, overrides={"batch": batch}, capacity_gib=series_capacity_gib(ctx),
                    frames=ctx.frames, evidence=evidence_text(ctx))


def _fitting_batch(ctx, batch: int) -> int | None:
    """The largest batch below `batch` that the estimator says fits, or None when it cannot tell."""
    for candidate in range(batch - 1, 0, -1):
        if batch % candidate:
            continue
        result = _estimate(ctx, candidate)
        if not result or result.get("fits") is None:
            return None
        if result["fits"]:
            return candidate
    return None


def batch_change(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    cmd = edits.cmd
    batch_text, where = lookup(ctx, cmd, BATCH_KEYS)
    accum_text, _ = lookup(ctx, cmd, ACCUM_KEYS)
    notes = []
    section = script_section_setting(ctx, cmd, BATCH_KEYS) if batch_text is None else None
    if section is not None:
        # the team's config keeps the batch in the script's own section (pretrain: {batch_size: 1024})
        batch_text, where = str(section[2]), f"{section[0]} ({section[1]})"
    batch = as_int(batch_text)
    if batch is None:
        batch = 8
        notes.append("the per-device batch was not given: the HF TrainingArguments default of 8 is assumed")
    accumulation = as_int(accum_text) or 1
    world, how = job_world_size(ctx, cmd)
    target = _fitting_batch(ctx, batch) if batch > 1 else None
    new_batch, new_accum = plan_batch(batch, accumulation, target)
    if new_batch == batch:
        notes.append("the per-device batch is already 1: cut memory with gradient checkpointing, "
                     "a shorter sequence or stronger sharding instead")
        return edits.fix(kind, "Per-device batch is already 1", "Nothing left to cut in the batch.", notes=notes)
    if section is not None:
        edits.patch_config(section[0], section[1], new_batch)
    else:
        edits.set(BATCH_KEYS, new_batch, in_code=(
            f"the DataLoader's batch_size: {batch} -> {new_batch} "
            f"({'the batch that ran, from ' + where if where else 'assumed'})"))
    edits.set(ACCUM_KEYS, new_accum, in_code=(
        f"accumulate gradients over {new_accum} micro-batches: call optimizer.step() and zero_grad() every "
        f"{new_accum} batches (with DDP, wrap the other backward passes in model.no_sync())"))
    ds_name, ds = deepspeed_config(ctx, cmd)
    if ds:
        for key, value in (("train_micro_batch_size_per_gpu", new_batch), ("gradient_accumulation_steps", new_accum)):
            if key in ds and ds[key] != "auto":
                edits.patch_config(ds_name, key, value)
    global_batch = batch * accumulation * world
    notes.insert(
        0,
        f"global batch kept: {batch} x {accumulation} x {world} = {new_batch} x {new_accum} x {world} = {global_batch} "
        f"(per-device batch x gradient accumulation x world size; {how})"
    )
    if target:
        notes.append(f"the estimator puts batch {new_batch} within the GPU's memory")
    title = (f"Cut the per-device batch {batch} -> {new_batch} and raise gradient accumulation "
             f"{accumulation} -> {new_accum}")
    if kind == "increase_grad_accum":
        title = (f"Raise gradient accumulation {accumulation} -> {new_accum} so the per-device batch can drop "
                 f"{batch} -> {new_batch}")
    why = ("Activation memory grows linearly with the per-device batch; accumulating gradients over more "
           "micro-batches keeps the optimizer's global batch, so the training recipe does not change.")
    extra = {}
    before, after = (_estimate(ctx, batch), _estimate(ctx, new_batch)) if ctx.category == "gpu_oom" else (None, None)
    if before and after:
        extra["estimate"] = {"total_gib": after["total_gib"], "fits": after["fits"],
                             "before_gib": before["total_gib"], "capacity_gib": after["capacity_gib"]}
    fix = edits.fix(kind, title, why, notes=notes, cost="medium", **extra,
                    global_batch={"before": [batch, accumulation, world], "after": [new_batch, new_accum, world],
                                  "total": global_batch})
    kept = _global_batch_kept(ctx, fix, global_batch, world)
    return verify(ctx, fix, [kept]) if kept else fix


def _global_batch_kept(ctx, fix: dict, global_batch: int, world: int) -> str | None:
    """A problem when the corrected command (and config patch) no longer multiply to the same global batch."""
    if not fix.get("command"):
        return None
    cmd = parse_command(fix["command"])
    patched = {k: v for patch in (fix.get("config_patch") or {}).values() for k, v in patch.items()}
    corrected = replace(ctx, command=fix["command"],
                        configs={**(ctx.configs or {}), **(fix.get("config") or {})})
    in_code = {c["key"]: c["new"] for c in fix.get("changes") or [] if c.get("where") == "code"}
    batch = as_int(lookup(corrected, cmd, BATCH_KEYS)[0]) or as_int(str(patched.get("train_micro_batch_size_per_gpu")))
    batch = batch or next((as_int(str(in_code[k])) for k in BATCH_KEYS if k in in_code), None)
    accumulation = as_int(lookup(corrected, cmd, ACCUM_KEYS)[0]) or next(
        (as_int(str(in_code[k])) for k in ACCUM_KEYS if k in in_code), None) or 1
    if batch is None or batch * accumulation * world == global_batch:
        return None
    return f"global batch not kept: {batch} x {accumulation} x {world} != {global_batch}"
