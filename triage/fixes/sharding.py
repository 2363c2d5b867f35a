"""Stronger sharding or offload: FSDP SHARD_GRAD_OP -> FULL_SHARD -> + offload, ZeRO 1/2 -> 3 ->
+ optimizer offload -> + parameter offload; DDP -> FSDP FULL_SHARD (several GPUs) or ZeRO-3 with
CPU offload (one GPU)."""
from __future__ import annotations

from .common import Edits, as_int, config_values, deepspeed_config, is_hf_style, job_world_size

ZERO3_OFFLOAD = {
    "bf16": {"enabled": "auto"},
    "fp16": {"enabled": "auto"},
    "zero_optimization": {
        "stage": 3,
        "offload_optimizer": {"device": "cpu", "pin_memory": True},
        "offload_param": {"device": "cpu", "pin_memory": True},
        "overlap_comm": True,
        "contiguous_gradients": True,
        "stage3_gather_16bit_weights_on_model_save": True,
    },
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "train_batch_size": "auto",
    "train_micro_batch_size_per_gpu": "auto",
}
_WHY = ("Sharding spreads weights, gradients and optimizer states over the GPUs instead of keeping a full "
        "copy on each; offload moves them to host RAM at the cost of PCIe traffic.")


def shard_more(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    cmd = edits.cmd
    if ctx.category == "host_oom":
        return _load_sharded(ctx, edits, kind)
    fsdp = cmd.flag("fsdp")
    if fsdp is not None and fsdp.value:
        return _stronger_fsdp(edits, kind, fsdp.value)
    ds_name, ds = deepspeed_config(ctx, cmd)
    if ds is not None or ds_name:
        return _stronger_zero(edits, kind, ds_name, ds)
    accel = next(((name, conf) for name, conf in config_values(ctx) if "distributed_type" in conf), None)
    if accel is not None:
        return _stronger_accelerate(edits, kind, *accel)
    world, _ = job_world_size(ctx, cmd)
    if cmd.launcher == "accelerate":
        edits.set(("use_fsdp",), True, where="launcher")
        edits.set(("fsdp_sharding_strategy",), "FULL_SHARD", where="launcher")
        edits.set(("fsdp_auto_wrap_policy",), "TRANSFORMER_BASED_WRAP", where="launcher")
        if world == 1:
            edits.set(("fsdp_offload_params",), "true", where="launcher")
        return edits.fix(kind, "Shard the model with FSDP FULL_SHARD through accelerate", _WHY, cost="medium")
    if world > 1 and (is_hf_style(cmd, ctx) or not ctx.command):
        edits.set(("fsdp",), "full_shard auto_wrap")
        return edits.fix(kind, f"Shard weights, gradients and optimizer over the {world} GPUs (FSDP FULL_SHARD)",
                         _WHY, cost="medium",
                         notes=["HF Trainer wraps the model's decoder layers itself (_no_split_modules); "
                                "add --fsdp_transformer_layer_cls_to_wrap for older transformers"])
    if is_hf_style(cmd, ctx) or not ctx.command:
        name = "ds_zero3_offload.json"
        edits.set(("deepspeed",), name)
        return edits.fix(kind, "Use DeepSpeed ZeRO-3 with CPU offload of optimizer and parameters", _WHY,
                         cost="high", config={name: ZERO3_OFFLOAD},
                         notes=[f"write the JSON under 'config' to {name}; 'auto' takes the values from the flags",
                                "offload needs free host RAM of about 12-16 bytes per parameter"])
    # (a change in the script's code, not a flag: nothing in the command shows it in place already)
    return edits.fix(kind, "Shard the model (FSDP FULL_SHARD or DeepSpeed ZeRO-3)", _WHY, cost="high", applicable=True,
                     notes=["the script is not a HF Trainer script: wrap the model in "
                            "torch.distributed.fsdp.FullyShardedDataParallel(sharding_strategy=FULL_SHARD) "
                            "or deepspeed.initialize with a ZeRO-3 config"])


def _stronger_fsdp(edits: Edits, kind: str, value: str) -> dict:
    words = value.split()
    if "shard_grad_op" in words:
        words[words.index("shard_grad_op")] = "full_shard"
        title = "FSDP: shard the parameters too (shard_grad_op -> full_shard)"
    elif "offload" not in words:
        words.insert(1 if words and words[0] in ("full_shard", "hybrid_shard") else 0, "offload")
        title = "FSDP: offload parameters and gradients to CPU"
    else:
        return edits.fix(kind, "FSDP already shards fully and offloads", _WHY,
                         notes=["nothing stronger to set: cut the batch or sequence length, or add GPUs"])
    new_value = " ".join(words)
    edits.set(("fsdp",), new_value)
    return edits.fix(kind, title, _WHY, cost="medium" if "offload" not in words else "high")


def _stronger_zero(edits: Edits, kind: str, name: str | None, ds: dict | None) -> dict:
    name = name or "ds_config.json"
    zero = (ds or {}).get("zero_optimization") or {}
    stage = as_int(str(zero.get("stage"))) if zero.get("stage") is not None else None
    if ds is None:
        edits.patch_config(name, "zero_optimization.stage", 3)
        edits.patch_config(name, "zero_optimization.offload_optimizer", {"device": "cpu", "pin_memory": True})
        return edits.fix(kind, f"DeepSpeed: ZeRO stage 3 with optimizer offload in {name}", _WHY, cost="high",
                         notes=[f"{name} was not given: set these keys in it"])
    if stage is None or stage < 3:
        edits.patch_config(name, "zero_optimization.stage", 3)
        edits.patch_config(name, "zero_optimization.stage3_gather_16bit_weights_on_model_save", True)
        title = f"DeepSpeed: ZeRO stage {stage or 0} -> 3 (shard the parameters too)"
        cost = "medium"
    elif str((zero.get("offload_optimizer") or {}).get("device", "none")) not in ("cpu", "nvme"):
        edits.patch_config(name, "zero_optimization.offload_optimizer", {"device": "cpu", "pin_memory": True})
        title, cost = "DeepSpeed ZeRO-3: offload the optimizer states to CPU", "high"
    elif str((zero.get("offload_param") or {}).get("device", "none")) not in ("cpu", "nvme"):
        edits.patch_config(name, "zero_optimization.offload_param", {"device": "cpu", "pin_memory": True})
        title, cost = "DeepSpeed ZeRO-3: offload the parameters to CPU as well", "high"
    else:
        return edits.fix(kind, "DeepSpeed already runs ZeRO-3 with full offload", _WHY,
                         notes=["nothing stronger to set: cut the batch or sequence length, or add GPUs"])
    return edits.fix(kind, title, _WHY, cost=cost)


def _stronger_accelerate(edits: Edits, kind: str, name: str, accel: dict) -> dict:
    if str(accel.get("distributed_type", "")).upper() == "FSDP":
        fsdp = accel.get("fsdp_config") or {}
        strategy = str(fsdp.get("fsdp_sharding_strategy", "")).upper()
        if strategy in ("SHARD_GRAD_OP", "2", "NO_SHARD", "3"):
            edits.patch_config(name, "fsdp_config.fsdp_sharding_strategy", "FULL_SHARD")
            return edits.fix(kind, "accelerate FSDP: FULL_SHARD", _WHY, cost="medium")
        edits.patch_config(name, "fsdp_config.fsdp_offload_params", True)
        return edits.fix(kind, "accelerate FSDP: offload parameters to CPU", _WHY, cost="high")
    ds = accel.get("deepspeed_config") or {}
    if (as_int(str(ds.get("zero_stage", 0))) or 0) < 3:
        edits.patch_config(name, "deepspeed_config.zero_stage", 3)
        return edits.fix(kind, "accelerate DeepSpeed: ZeRO stage 3", _WHY, cost="medium")
    edits.patch_config(name, "deepspeed_config.offload_optimizer_device", "cpu")
    return edits.fix(kind, "accelerate DeepSpeed: offload the optimizer to CPU", _WHY, cost="high")


def _load_sharded(ctx, edits: Edits, kind: str) -> dict:
    """Host RAM ran out: shard at load time (ZeRO-3 zero.Init, FSDP RAM-efficient loading), never offload."""
    cmd = edits.cmd
    name, ds = deepspeed_config(ctx, cmd)
    notes = ["do not add CPU offload here: it moves more state into the host RAM that ran out"]
    if name or ds is not None:
        name = name or "ds_config.json"
        stage = as_int(str(((ds or {}).get("zero_optimization") or {}).get("stage", 0))) or 0
        if stage < 3:
            edits.patch_config(name, "zero_optimization.stage", 3)
        for key in ("offload_optimizer", "offload_param"):
            if ((ds or {}).get("zero_optimization") or {}).get(key):
                edits.patch_config(name, f"zero_optimization.{key}", None)
        notes.append("with ZeRO-3 the HF Trainer builds the model under deepspeed.zero.Init: each rank "
                     "materialises only its shard instead of the whole checkpoint")
        return edits.fix(kind, "Load the model already sharded (DeepSpeed ZeRO-3, no offload)",
                         "Every rank loaded the full model into host RAM at once.", notes=notes, cost="medium")
    world, _ = job_world_size(ctx, cmd)
    if world > 1 and (is_hf_style(cmd, ctx) or not ctx.command):
        edits.set(("fsdp",), "full_shard auto_wrap")
        edits.set(("fsdp_config",), '{"cpu_ram_efficient_loading": true, "sync_module_states": true}')
        notes.append("cpu_ram_efficient_loading: only rank 0 reads the checkpoint, the others start empty")
        return edits.fix(kind, "Load the model once and shard it (FSDP cpu_ram_efficient_loading)",
                         "Every rank loaded the full model into host RAM at once.", notes=notes, cost="medium")
    notes.append("load the weights on one rank and broadcast them (FSDP sync_module_states=True), or use ZeRO-3")
    return edits.fix(kind, "Load the model once and shard it", "Every rank loaded the full model into host RAM at once.",
                     notes=notes, cost="medium")
