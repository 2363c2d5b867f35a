"""fix_config: contradictory settings in flags or a launcher config.

Handled: DeepSpeed's batch check (train_batch_size != micro x accumulation x world), bf16 on a GPU
without it, fp16-only kernel faults, host RAM blown while loading (host_oom), and otherwise the
setting the error names.
"""
from __future__ import annotations

import re

from .common import (
    Edits,
    as_int,
    config_items,
    config_values,
    deepspeed_config,
    evidence_text,
    is_hf_style,
    job_world_size,
    lookup,
)
from .host_fixes import host_memory
from .memory_fixes import SEQ_KEYS

_SIZES_IN_MESSAGE = re.compile(r"\d+x\d+|(?<=\()\d+(?=\))")
_DS_BATCH = re.compile(r"(\d+)\s*!=\s*(\d+)\s*\*\s*(\d+)\s*\*\s*(\d+)")


def fix_config(ctx, kind: str) -> dict:
    text = evidence_text(ctx)
    if ctx.category == "host_oom":  # (a DeepSpeed config printed in the log names train_batch_size too)
        return host_memory(ctx, kind)
    if _DS_BATCH.search(text) or re.search(r"train_batch_size", text):
        return deepspeed_batch(ctx, kind)
    if ctx.category == "gpu_oom" and engine_in_job(ctx.command, ctx.frames):
        return engine_on_a_training_gpu(ctx, kind)
    if re.search(r"bf16|bfloat16", text, re.I) and re.search(r"not support|n't support|unsupported|only support|requires|need", text, re.I):
        return bf16_unsupported(ctx, kind)
    if ctx.category == "cuda_error" and re.search(r"misaligned|fp16|half", text, re.I):
        return without_fp16(ctx, kind)
    if (ctx.facts or {}).get("filter_line"):
        return loosen_filter(ctx, kind, str(ctx.facts["filter_line"]))
    if _RECOMPUTED.search(text):
        return one_checkpointing(ctx, kind)
    if _WORKERLESS.search(text):
        return workerless_loader(ctx, kind, _WORKERLESS.search(text).group(1))
    if ctx.rule_id == "config.no_model_columns" and ctx.category == "config_invalid":
        return keep_raw_columns(ctx, kind)
    if (ctx.facts or {}).get("partitioned_weights"):
        return whole_weights(ctx, kind)
    if (ctx.facts or {}).get("old_launch_without_env"):
        return launch_with_env(ctx, kind)
    edits = Edits(ctx)
    zeros = (ctx.facts or {}).get("zero_settings")
    if zeros:
        where = [name for name, conf in config_values(ctx) if any(str(key) in zeros for key, _ in config_items(conf))]
        notes = [f"{', '.join(zeros)} is 0{' in ' + ', '.join(where) if where else ''}, and the script divides by "
                 "it: give it a positive value (an interval, a count or a number of warm-up steps)"]
        return edits.fix(kind, f"Give {', '.join(zeros)} a positive value",
                         "A setting of 0 reaches a division in the script.", notes=notes)
    sizes = (ctx.facts or {}).get("size_settings")
    if sizes:
        values = {str(key): value for _, conf in config_values(ctx) for key, value in config_items(conf)}
        shown = ", ".join(f"{name}: {values[name]}" for name in sizes if name in values)
        clash = _SIZES_IN_MESSAGE.findall(ctx.message or "")
        notes = [f"the job's config sizes the model with {shown}",
                 f"the sizes that disagree: {' against '.join(clash[:2])}" if clash else
                 "the message gives the two sizes that disagree",
                 "set the setting that sizes this layer to what the data (or the setting it depends on) gives, "
                 "or derive it from the data when the model is built"]
        return edits.fix(kind, f"Make {', '.join(sizes[:2])} agree with the data",
                         "A size setting of the config does not fit the tensors the data gives.", notes=notes)
    named = re.findall(r"`([\w.]+)`|'([\w.]+)'", text)
    keys = [a or b for a, b in named][:3]
    notes = [f"the error names: {', '.join(keys)}"] if keys else []
    notes.append("make the launcher config, the DeepSpeed/FSDP config and the script flags agree on this setting")
    return edits.fix(kind, "Correct the contradictory setting the error names",
                     "The settings given to the job contradict each other or the hardware.", notes=notes)


# an inference engine the training job starts for its rollouts (GRPO/PPO with vLLM or SGLang)
_ENGINE = re.compile(r"\bvllm\b|\bsglang\b|use_vllm|vllm_", re.IGNORECASE)
_ENGINE_DEVICE = re.compile(r"^cuda:(\d+)$")


def engine_in_job(command: str | None, frames) -> bool:
    """The job runs an inference engine beside training: its command enables one, or its frames are the engine's."""
    return bool(_ENGINE.search(command or "")) or any(_ENGINE.search(str(frame)) for frame in frames or [])


def engine_on_a_training_gpu(ctx, kind: str) -> dict:
    """GPU memory ran out on a GPU that the rollout engine shares with a training rank: give the engine its own
    GPU (one training process fewer), or let it take a smaller share of the GPU."""
    edits = Edits(ctx)
    cmd = edits.cmd
    notes = []
    device = _ENGINE_DEVICE.match(cmd.value("vllm_device") or "")
    processes = as_int(cmd.value("num_processes", "nproc_per_node", "nproc-per-node", where="launcher") or "")
    if device and processes and int(device.group(1)) < processes:
        # the engine's GPU is one of the training ranks' GPUs: train on the others
        fewer = int(device.group(1)) if int(device.group(1)) == processes - 1 else processes - 1
        keys = ("num_processes",) if cmd.flag("num_processes", where="launcher") is not None else ("nproc_per_node",)
        edits.set(keys, fewer, where="launcher")
        notes.append(f"vLLM runs on cuda:{device.group(1)}, which a training rank also uses: train on {fewer} "
                     f"processes so that cuda:{device.group(1)} is vLLM's alone")
        generations = as_int(cmd.value("num_generations") or "")
        per_device = as_int(cmd.value("per_device_train_batch_size") or "")
        if generations and per_device and (fewer * per_device) % generations:
            # GRPO splits the global batch into whole groups of completions per prompt
            fits = max(n for n in range(1, generations + 1) if (fewer * per_device) % n == 0)
            edits.set(("num_generations",), fits)
            notes.append(f"num_generations {generations} -> {fits}: {fewer} x {per_device} completions per step must "
                         "split into whole groups")
    share, _ = lookup(ctx, cmd, ("vllm_gpu_memory_utilization", "gpu_memory_utilization"))
    try:
        current = float(share) if share is not None else None
    except ValueError:
        current = None
    if current is not None and current > 0.5 and not notes:
        edits.set(("vllm_gpu_memory_utilization", "gpu_memory_utilization"), 0.5)
        notes.append(f"vLLM reserves {current:g} of the GPU for its KV cache before training allocates: 0.5 leaves "
                     "room for the training rank on the same GPU")
    notes.append("the out-of-memory message lists another process holding gigabytes on the GPU that ran out: the "
                 "rollout engine and a training rank share it")
    return edits.fix(kind, "Give the rollout engine its own GPU, or a smaller share of the one it shares",
                     "The inference engine and a training rank were placed on the same GPU; together they do not fit.",
                     notes=notes)


_LIMIT = re.compile(r"\b(max_length|max_seq_length|max_seq_len|cutoff_len|model_max_length|max_len|"
                    r"max_tokens|max_\w*words|min_\w+)\s*[=:]\s*(\d+)")


def loosen_filter(ctx, kind: str, line: str) -> dict:
    """A length or quality filter left no rows (the log's own count says so): relax the limit it names, where the
    job sets it, and say what else keeps the rows (truncating instead of dropping them)."""
    edits = Edits(ctx)
    notes = [f"the filter: {line.strip()[:200]}"]
    named = _LIMIT.search(line)
    keys = (named.group(1),) if named else SEQ_KEYS
    value, where = lookup(ctx, edits.cmd, keys)
    current = as_int(value) or (int(named.group(2)) if named else None)
    title = "Relax the filter that left no rows"
    if current is not None:
        key = keys[0]
        new = current // 2 if key.startswith("min_") else current * 2
        if edits.set(keys, new):
            title = f"Relax {key} {current} -> {new}, which filtered every row out"
        notes.append(f"{key} {current} -> {new}; check the lengths the data really has before training on it")
    if not keys[0].startswith("min_"):
        notes.append("or truncate long rows instead of dropping them (a truncation setting), so none is lost")
    else:
        notes.append("or rebalance the shards so that every rank keeps rows above the limit")
    return edits.fix(kind, title, "A length or quality limit dropped every row, so the dataset the trainer got was "
                     "empty; the limit, not the data, is what to change.", notes=notes)


_WORKERLESS = re.compile(r"(persistent_workers|prefetch_factor) option (?:needs num_workers|could only be specified)")


def workerless_loader(ctx, kind: str, option: str) -> dict:
    """A worker-only DataLoader option (persistent workers, prefetch factor) with no worker processes: drop the
    option where the job sets it (the worker count of 0 may be deliberate: a host short of memory or shm)."""
    edits = Edits(ctx)
    keys = {"persistent_workers": ("dataloader_persistent_workers", "persistent_workers"),
            "prefetch_factor": ("dataloader_prefetch_factor", "prefetch_factor")}[option]
    value = False if option == "persistent_workers" else None
    found = edits.set(keys, value, add=False)
    notes = [f"{option} only applies to worker processes, and the job starts none (num_workers 0)"]
    if not found:
        notes.append(f"set {keys[0]} = {value} where the job configures its data loader")
    notes.append("or give the loader worker processes (dataloader_num_workers 2 or more) if the host has the memory")
    return edits.fix(kind, f"Drop {option}, which needs data loader workers",
                     "The data loader refuses a worker-only option when it starts no worker processes.", notes=notes)


_RECOMPUTED = re.compile(r"Recomputed values for the following tensors|different number of tensors was saved")


def one_checkpointing(ctx, kind: str) -> dict:
    """Activation checkpointing recomputed a layer unlike its forward: where FSDP's own activation checkpointing
    is on in a config, turn it off and keep the model's gradient checkpointing (one switch, not two)."""
    edits = Edits(ctx)
    notes = []
    for name, conf in config_values(ctx):
        section = conf.get("fsdp_config") if isinstance(conf.get("fsdp_config"), dict) else conf
        prefix = "fsdp_config." if section is not conf else ""
        for key in ("fsdp_activation_checkpointing", "activation_checkpointing"):
            if str(section.get(key)).lower() == "true":
                edits.patch_config(name, prefix + key, False)
                notes.append(f"{name} turns on FSDP's activation checkpointing ({key}) while the model checkpoints "
                             "its own layers (gradient_checkpointing): keep one")
    if not notes:
        notes.append("turn activation checkpointing on in one place only (the trainer's gradient_checkpointing or "
                     "FSDP's activation_checkpointing); with FSDP, or where the forward is not deterministic, "
                     "gradient_checkpointing_kwargs={'use_reentrant': True} avoids recomputing freed parameters")
    return edits.fix(kind, "Checkpoint activations in one place only",
                     "Recomputation in backward met a layer that differs from its forward pass; two checkpointing "
                     "switches at once, or non-reentrant recomputation meeting parameters FSDP has freed, cause it.",
                     notes=notes)


def deepspeed_batch(ctx, kind: str) -> dict:
    """DeepSpeed asserts train_batch_size == micro_batch_per_gpu x gradient_accumulation x world_size."""
    edits = Edits(ctx)
    cmd = edits.cmd
    name, ds = deepspeed_config(ctx, cmd)
    name = name or "ds_config.json"
    found = _DS_BATCH.search(evidence_text(ctx))
    micro = as_int(lookup(ctx, cmd, ("per_device_train_batch_size",))[0])
    accum = as_int(lookup(ctx, cmd, ("gradient_accumulation_steps",))[0])
    world, how = job_world_size(ctx, cmd)
    if found:
        micro, accum, world = micro or int(found.group(2)), accum or int(found.group(3)), int(found.group(4))
    micro, accum = micro or 1, accum or 1
    notes = [f"DeepSpeed requires train_batch_size = micro batch x accumulation x world size = "
             f"{micro} x {accum} x {world} = {micro * accum * world}"]
    if found:
        notes.append(f"the config said {found.group(1)}; DeepSpeed saw world size {found.group(4)} ({how})")
    if is_hf_style(cmd, ctx) or not ctx.command:
        for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
            edits.patch_config(name, key, "auto")
        notes.append("'auto' lets the HF Trainer fill the three values from the command line, so they cannot disagree")
        if not ctx.command:
            notes.append(f"without the HF Trainer set the numbers instead: train_batch_size {micro * accum * world}, "
                         f"train_micro_batch_size_per_gpu {micro}, gradient_accumulation_steps {accum}")
    else:
        edits.patch_config(name, "train_batch_size", micro * accum * world)
        edits.patch_config(name, "train_micro_batch_size_per_gpu", micro)
        edits.patch_config(name, "gradient_accumulation_steps", accum)
    if found and ctx.world_size and int(found.group(4)) != ctx.world_size:
        notes.append(f"the logs show {ctx.world_size} processes but DeepSpeed counted {found.group(4)}: "
                     "check that every GPU joined (launcher process count, CUDA_VISIBLE_DEVICES)")
    return edits.fix(kind, f"Make the DeepSpeed batch settings agree ({name})",
                     "DeepSpeed checks that the global batch equals micro batch x accumulation x world size; "
                     "a hard-coded train_batch_size breaks as soon as the GPU count or flags change.",
                     notes=notes)


def bf16_unsupported(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    edits.set(("bf16",), False, add=False)
    edits.set(("fp16",), True)
    name, ds = deepspeed_config(ctx, edits.cmd)
    if ds and (ds.get("bf16") or {}).get("enabled") not in (False, None):
        edits.patch_config(name, "bf16.enabled", False)
        edits.patch_config(name, "fp16.enabled", "auto")
    return edits.fix(kind, "Use fp16 instead of bf16 on this GPU",
                     "bf16 needs compute capability 8.0 (Ampere) or newer; older GPUs (V100, T4) only do fp16.",
                     notes=["fp16 needs loss scaling (on by default in the Trainer); watch for overflow"])


def without_fp16(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    if edits.cmd.flag("fp16") is not None:
        edits.rw.remove_flag(("fp16",))
    return edits.fix(kind, "Run without fp16 to confirm the kernel fault is precision-specific",
                     "The CUDA fault appears only in the half-precision path (e.g. misaligned fp16 kernels when "
                     "a model dimension is not a multiple of 8).",
                     notes=["if it trains without fp16, pad the model dimensions to multiples of 8 or use bf16"])


def keep_raw_columns(ctx, kind: str) -> dict:
    """The Trainer dropped the raw columns the job's collator builds the inputs from: keep them."""
    edits = Edits(ctx)
    edits.set(("remove_unused_columns",), False, in_code="TrainingArguments(..., remove_unused_columns=False)")
    return edits.fix(kind, "Keep the dataset's columns for the collator (remove_unused_columns false)",
                     "The Trainer drops every column its model's forward does not name, before the collator runs.",
                     notes=["the collator (or a transform) turns the raw columns into the model's inputs: the "
                            "Trainer must hand it the columns",
                            "or map the raw columns into the model's inputs (pixel_values, input_ids, labels) "
                            "before training"])


def whole_weights(ctx, kind: str) -> dict:
    """A step that uses the weights directly ran under ZeRO-3, where each rank holds them partitioned: ZeRO-2."""
    edits = Edits(ctx)
    name, conf = deepspeed_config(ctx, edits.cmd)
    notes = ["ZeRO-3 keeps each parameter partitioned across the ranks (an empty placeholder on each) outside "
             "a gather; ZeRO-2 keeps whole weights on every rank",
             "or gather the weights for that step: with deepspeed.zero.GatheredParameters(params): ..."]
    if name and isinstance(conf, dict) and isinstance(conf.get("zero_optimization"), dict):
        edits.patch_config(name, "zero_optimization.stage", 2)
    else:
        notes.insert(0, f"set ZeRO stage 2 in {name or 'the DeepSpeed config'} for this run")
    return edits.fix(kind, "Run this step with ZeRO-2 (whole weights on every rank)",
                     "The step uses weights that ZeRO-3 holds partitioned (size 0) on each rank.", notes=notes)


def launch_with_env(ctx, kind: str) -> dict:
    """The old torch.distributed.launch without --use_env, for a script that reads LOCAL_RANK: add the flag."""
    edits = Edits(ctx)
    edits.rw.set_flag(("use_env", "use-env"), True, where="launcher")
    return edits.fix(kind, "Launch with --use_env (or torchrun) so LOCAL_RANK is set",
                     "The old torch.distributed.launch passes --local_rank as an argument; the script reads "
                     "LOCAL_RANK from the environment, which that launcher sets only with --use_env.",
                     notes=["torchrun (python -m torch.distributed.run) always sets LOCAL_RANK, RANK and "
                            "WORLD_SIZE", "or have the script take --local_rank from its arguments"])
