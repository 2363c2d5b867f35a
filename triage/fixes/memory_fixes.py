"""GPU-memory fixes other than the batch: checkpointing, mixed precision, sequence length,
and the allocator setting against fragmentation."""
from __future__ import annotations

from .common import Edits, as_int, deepspeed_config, lookup, nested_setting

CHECKPOINT_KEYS = ("gradient_checkpointing", "use_gradient_checkpointing", "grad_checkpoint")
SEQ_KEYS = ("model_max_length", "max_seq_length", "cutoff_len", "sequence_len", "max_length", "max_len",
            "max_seq_len", "seq_length", "block_size")
TRUE = {"true", "1", "yes"}


def gradient_checkpointing(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    value, _ = lookup(ctx, edits.cmd, CHECKPOINT_KEYS)
    if value is not None and value.lower() in TRUE:
        return edits.fix(kind, "Gradient checkpointing is already on",
                         "The job already recomputes activations; look at batch, sequence length or sharding.")
    edits.set(CHECKPOINT_KEYS, True, in_code="call model.gradient_checkpointing_enable() after loading the model "
                                          "(HF models), or wrap each block in torch.utils.checkpoint.checkpoint")
    return edits.fix(
        kind, "Turn on gradient checkpointing",
        "Only each layer's input is kept and the rest is recomputed in the backward pass: activation memory "
        "drops from L full layers to about one layer, for roughly 20-30% more compute.",
        notes=["Trainer-based scripts (HF, LLaMA-Factory, FastChat, TRL) accept --gradient_checkpointing True"],
        cost="medium",
    )


def mixed_precision(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    cmd = edits.cmd
    bf16, _ = lookup(ctx, cmd, ("bf16",))
    fp16, _ = lookup(ctx, cmd, ("fp16",))
    launcher_mp = cmd.value("mixed_precision", where="launcher")
    if any(v is not None and v.lower() in TRUE for v in (bf16, fp16)) or launcher_mp in ("bf16", "fp16"):
        return edits.fix(kind, "Mixed precision is already on",
                         "The job already trains in bf16/fp16; the memory has to come from elsewhere.")
    if cmd.launcher == "accelerate" and not cmd.flag("bf16"):
        edits.set(("mixed_precision",), "bf16", where="launcher")
    else:
        edits.set(("bf16",), True, in_code="run the forward pass under torch.autocast('cuda', dtype=torch.bfloat16)")
    ds_name, ds = deepspeed_config(ctx, cmd)
    if ds and not (ds.get("bf16") or {}).get("enabled"):
        edits.patch_config(ds_name, "bf16.enabled", "auto")
    return edits.fix(
        kind, "Train in bf16 mixed precision",
        "Half-precision weights, gradients and activations take half the bytes of fp32.",
        notes=["bf16 needs an Ampere or newer GPU (A100, H100, RTX 30xx/40xx); on V100/T4 use --fp16 True"],
    )


def reduce_seq_len(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    cmd = edits.cmd
    notes = []
    source = cmd.flag("max_source_length", "max_src_len")
    value, _ = lookup(ctx, cmd, SEQ_KEYS)
    current = as_int(value)
    if current is None and source is not None:
        new_source = max(as_int(source.value) or 0, 2) // 2
        edits.set((source.key,), new_source)
        target = cmd.flag("max_target_length")
        if target is not None and as_int(target.value):
            edits.set((target.key,), max(as_int(target.value) // 2, 1))
        return edits.fix(kind, "Halve the source (and target) length", _SEQ_WHY, notes=notes, cost="medium")
    limit = as_int((ctx.facts or {}).get("max_positions"))
    if limit:
        return _within_positions(ctx, edits, current, limit, kind)
    keys = SEQ_KEYS
    if current is None:
        current = 2048
        keys = _seq_keys_for(cmd)
        notes.append(f"the sequence length was not given: 2048 assumed; the flag for this script is --{keys[0]}")
    new = max(current // 2 // 64 * 64, 64) if current > 128 else max(current // 2, 1)
    edits.set(keys, new)
    notes.append(f"sequence length {current} -> {new}: samples longer than {new} tokens are truncated")
    return edits.fix(kind, f"Cut the maximum sequence length {current} -> {new}", _SEQ_WHY, notes=notes, cost="medium")


def _within_positions(ctx, edits, current: int | None, limit: int, kind: str) -> dict:
    """Inputs past the model's position embeddings: truncate them to the model's positions."""
    keys = _seq_keys_for(edits.cmd)
    present = next((key for key in SEQ_KEYS if lookup(ctx, edits.cmd, (key,))[0] is not None), None)
    nested = nested_setting(ctx, SEQ_KEYS) if present is None else None
    if present is not None:
        keys = (present, *[key for key in keys if key != present])
    if nested is not None:
        # the team's config keeps it in a section (data: {max_len: 320}): change it there
        edits.patch_config(nested[0], nested[1], limit)
        keys = (nested[1],)
        current = current if current is not None else as_int(nested[2])
    else:
        edits.set(keys, limit)
    was = f"{current} -> " if current is not None else ""
    notes = [f"the model has {limit} positions: every input must be truncated to at most {limit} tokens",
             "or drop the rows longer than that before training"]
    return edits.fix(kind, f"Truncate inputs to the model's {limit} positions ({keys[0]} {was}{limit})",
                     "The model's position embeddings end at its maximum length; a longer input cannot be embedded "
                     "at all, whatever the memory.", notes=notes, cost="low")


_SEQ_WHY = ("Activation memory grows with the sequence length (and the attention scores with its square "
            "without flash attention), so a shorter maximum length frees memory at once.")


def _seq_keys_for(cmd) -> tuple[str, ...]:
    names = {f.key for f in cmd.script_flags}
    if names & {"stage", "finetuning_type", "template", "cutoff_len"}:
        return ("cutoff_len", *SEQ_KEYS)  # LLaMA-Factory
    if names & {"dataset_text_field", "packing"}:
        return ("max_seq_length", *SEQ_KEYS)  # TRL
    return SEQ_KEYS


def fragmentation_share(oom: dict | None) -> float | None:
    if not oom or not oom.get("capacity_mib") or oom.get("reserved_unallocated_mib") is None:
        return None
    return oom["reserved_unallocated_mib"] / oom["capacity_mib"]


def is_fragmented(oom: dict | None) -> bool:
    """Large reserved-but-unallocated share: >= 1 GiB and >= 3% of the GPU, or more than the failed request."""
    share = fragmentation_share(oom)
    if share is None:
        return False
    unallocated = oom["reserved_unallocated_mib"]
    tried = oom.get("tried_mib") or 0
    return (unallocated >= 1024 and share >= 0.03) or (tried and unallocated >= tried and unallocated >= 256)


def expandable_segments(ctx, kind: str = "fix_config") -> dict:
    edits = Edits(ctx)
    edits.set_env("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    oom = (ctx.memory or {}).get("oom") or {}
    notes = []
    if oom.get("reserved_unallocated_mib") is not None:
        notes.append(
            f"{oom['reserved_unallocated_mib'] / 1024:.2f} GiB was reserved by PyTorch but unallocated when "
            f"{(oom.get('tried_mib') or 0) / 1024:.2f} GiB was requested: the cache is fragmented"
        )
    return edits.fix(
        kind, "Let the CUDA caching allocator grow segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)",
        "Memory reserved by PyTorch but unallocated is split into blocks too small for the request; expandable "
        "segments map more memory into an existing segment instead of failing.",
        notes=notes,
    )
