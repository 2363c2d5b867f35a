"""What the failed job asked of each GPU: model, precision, optimizer, sharding, batch, sequence.

Read from the launch command's flags (HF TrainingArguments, LLaMA-Factory, FastChat, TRL, PEFT),
the config files (DeepSpeed JSON, accelerate/FSDP YAML, axolotl / LLaMA-Factory YAML, config.json)
and the facts the rules extracted. Every default that had to be assumed is listed in
`assumptions`, so the estimate says what it rests on.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..commandline import LaunchCommand, normalise_key, parse_command, world_size
from .attention import infer_attention
from .models import ModelShape, shape_from_config, shape_from_name

MODEL_KEYS = ("model_name_or_path", "base_model", "model_name", "pretrained_model_name_or_path", "model_path", "model")
BATCH_KEYS = ("per_device_train_batch_size", "micro_batch_size", "train_micro_batch_size_per_gpu",
              "per_gpu_train_batch_size", "batch_size", "train_batch_size")
SEQ_KEYS = ("model_max_length", "max_seq_length", "cutoff_len", "sequence_len", "max_length", "max_len",
            "max_seq_len", "seq_length", "block_size")
TRUE = {"true", "1", "yes", "on", "fa2", "flash_attention_2", "flash_attn", "sdpa", "auto"}


@dataclass
class Setup:
    shape: ModelShape
    precision: str = "fp32"  # bf16 | fp16 | fp32 (the compute precision of the trained weights)
    optimizer: str = "adamw"  # adamw | adam8bit | sgd | adafactor
    sharding: str = "ddp"  # ddp | zero1 | zero2 | zero3 | fsdp_shard_grad_op | fsdp_full_shard | fsdp_hybrid_shard
    offload_optimizer: bool = False
    offload_params: bool = False
    world: int = 1
    shard_group: int = 1  # GPUs a shard is spread over (world; GPUs per node for hybrid)
    finetuning: str = "full"  # full | freeze | lora | lora_8bit | qlora
    lora_rank: int = 8
    trainable_layers: int = 0  # freeze tuning: the last N layers train
    batch: int = 8
    seq: int = 2048
    checkpointing: bool = False
    half_weights: bool = False  # the model itself is loaded in bf16/fp16 (--torch_dtype), not autocast
    flash: bool = False  # the a*s*s scores are not stored (flash-attention or SDPA)
    attention: str = "unknown"  # flash | sdpa | eager | unknown (see attention.py)
    attention_reason: str = ""
    assumptions: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # inputs neither given nor inferable: batch, seq, attention


class _Settings:
    """Look a setting up in the command's script flags, then config files, then facts."""

    def __init__(self, cmd: LaunchCommand, configs: dict, facts: dict) -> None:
        self.cmd = cmd
        self.flat: dict[str, object] = {}
        # training-argument configs only: DeepSpeed / accelerate / model configs reuse names with other meanings
        other = ("zero_optimization", "train_micro_batch_size_per_gpu", "distributed_type", "num_hidden_layers")
        for conf in (c for c in (configs or {}).values() if isinstance(c, dict)):
            if any(key in conf for key in other):
                continue
            for key, value in conf.items():
                if not isinstance(value, dict | list):
                    self.flat.setdefault(normalise_key(str(key)), value)
        self.facts = facts or {}

    def get(self, *keys: str):
        flag = self.cmd.flag(*keys)
        if flag is not None:
            return flag.value if flag.value is not None else "true"
        for key in keys:
            if normalise_key(key) in self.flat:
                return self.flat[normalise_key(key)]
            if key in self.facts:
                return self.facts[key]
        return None

    def on(self, *keys: str) -> bool:
        value = self.get(*keys)
        return value is not None and str(value).strip().lower() in TRUE


def _int(value) -> int | None:
    try:
        return int(float(str(value)))
    except (TypeError, ValueError):
        return None


def _find(configs: dict, test) -> dict | None:
    return next((c for c in (configs or {}).values() if isinstance(c, dict) and test(c)), None)


def read_setup(command: str | None, configs: dict, facts: dict, world: int | None = None,
               frames: list[str] | None = None, evidence: str = "") -> Setup | None:
    cmd = parse_command(command or "")
    settings = _Settings(cmd, configs, facts)
    model_name = settings.get(*MODEL_KEYS) or (facts or {}).get("model")
    model_config = _find(configs, lambda c: "num_hidden_layers" in c or "n_layer" in c)
    shape = shape_from_config(model_config) if model_config else None
    shape = shape or shape_from_name(str(model_name) if model_name else None)
    if shape is None:
        return None
    setup = Setup(shape=shape)
    notes = setup.assumptions
    _read_precision(setup, settings, configs, cmd)
    _read_training(setup, settings, notes, configs)
    _read_attention(setup, settings, frames, facts, evidence)
    accelerate = _find(configs, lambda c: "distributed_type" in c) or {}
    setup.world = world or world_size(cmd)[0] or _int(accelerate.get("num_processes")) or 1
    if not (world or world_size(cmd)[0] or _int(accelerate.get("num_processes"))):
        notes.append(f"world size {setup.world} (not stated by the command)")
    _read_sharding(setup, settings, configs, cmd)
    return setup


def _read_precision(setup: Setup, settings: _Settings, configs: dict, cmd: LaunchCommand) -> None:
    ds = _find(configs, lambda c: "zero_optimization" in c or "fp16" in c or "bf16" in c) or {}
    mixed = str(settings.get("mixed_precision") or cmd.value("mixed_precision", where="launcher") or "").lower()
    if settings.on("bf16") or mixed == "bf16" or (ds.get("bf16") or {}).get("enabled") is True:
        setup.precision = "bf16"
    elif settings.on("fp16") or mixed == "fp16" or (ds.get("fp16") or {}).get("enabled") is True:
        setup.precision = "fp16"
    elif str(settings.get("torch_dtype") or "").lower() in ("float16", "bfloat16", "fp16", "bf16"):
        setup.precision = "bf16" if "b" in str(settings.get("torch_dtype")).lower() else "fp16"
        setup.half_weights = True
        setup.assumptions.append(f"weights loaded as {settings.get('torch_dtype')} (--torch_dtype)")
    else:
        setup.assumptions.append("no bf16/fp16 flag: full fp32 training")
    optim = str(settings.get("optim", "optimizer") or (ds.get("optimizer") or {}).get("type") or "adamw").lower()
    setup.optimizer = ("adam8bit" if "8bit" in optim else "sgd" if "sgd" in optim
                       else "adafactor" if "adafactor" in optim else "adamw")


def _read_training(setup: Setup, settings: _Settings, notes: list[str], configs: dict) -> None:
    finetuning = str(settings.get("finetuning_type", "adapter") or "").lower()
    quant = str(settings.get("quantization_bit") or "")
    if settings.on("q_lora", "qlora", "load_in_4bit") or quant == "4" or finetuning == "qlora":
        setup.finetuning = "qlora"
    elif settings.on("load_in_8bit") or quant == "8":
        setup.finetuning = "lora_8bit"
    elif finetuning == "lora" or settings.on("use_peft", "lora", "use_lora") or settings.get("lora_r", "lora_rank"):
        setup.finetuning = "lora"
    elif finetuning == "freeze" or str(settings.get("train_type") or "").lower() == "freeze":
        setup.finetuning = "freeze"
        modules = str(settings.get("freeze_module_name") or "")
        setup.trainable_layers = _int(settings.get("freeze_trainable_layers")) or \
            len([m for m in modules.split(",") if m.strip()]) or 2
    setup.lora_rank = _int(settings.get("lora_r", "lora_rank")) or 8
    ds = _find(configs, lambda c: "train_micro_batch_size_per_gpu" in c) or {}
    batch = _int(settings.get(*BATCH_KEYS)) or _int(ds.get("train_micro_batch_size_per_gpu"))
    if batch is None:
        notes.append("per-device batch not given: HF TrainingArguments default 8")
        setup.unknown.append("batch")
    setup.batch = batch or 8
    seq = _int(settings.get(*SEQ_KEYS))
    source, target = _int(settings.get("max_source_length", "max_src_len")), _int(settings.get("max_target_length"))
    if seq is None and source:
        seq = source + (target or 0)
    if seq is None:
        notes.append("sequence length not given: 2048 tokens assumed")
        setup.unknown.append("seq")
    setup.seq = seq or 2048
    setup.checkpointing = settings.on("gradient_checkpointing", "use_gradient_checkpointing")


def _read_attention(setup: Setup, settings: _Settings, frames, facts, evidence: str) -> None:
    setting = settings.get("attn_implementation", "flash_attn", "flash_attention", "use_flash_attn",
                           "sdp_attention", "attn_impl")
    setup.attention, setup.attention_reason = infer_attention(setting, frames, facts, evidence)
    if setup.attention == "unknown":
        setup.unknown.append("attention")
        setup.flash = True  # current transformers default to SDPA; the range shows eager as the upper end
        setup.assumptions.append("attention kernel unknown: SDPA assumed (the default of current transformers); "
                                 "eager attention, which stores the a x s x s scores, is the upper end of the range")
    else:
        setup.flash = setup.attention in ("flash", "sdpa")
        setup.assumptions.append(f"attention: {setup.attention} ({setup.attention_reason})")


def _read_sharding(setup: Setup, settings: _Settings, configs: dict, cmd: LaunchCommand) -> None:
    setup.shard_group = setup.world
    fsdp = str(settings.get("fsdp") or "").lower()
    accel = _find(configs, lambda c: "distributed_type" in c) or {}
    fsdp_conf = accel.get("fsdp_config") or {}
    strategy = str(fsdp_conf.get("fsdp_sharding_strategy", "")).lower()
    ds = _find(configs, lambda c: "zero_optimization" in c or "train_micro_batch_size_per_gpu" in c)
    if fsdp or str(accel.get("distributed_type", "")).upper() == "FSDP":
        words = fsdp + " " + strategy
        if "hybrid" in words or strategy == "4":
            setup.sharding = "fsdp_hybrid_shard"
            per_node = world_size(cmd)[0] if cmd.launcher != "torchrun" else _int(cmd.value("nproc_per_node", where="launcher"))
            setup.shard_group = per_node or setup.world
        elif "shard_grad_op" in words or strategy == "2":
            setup.sharding = "fsdp_shard_grad_op"
        elif "no_shard" in words or strategy == "3":
            setup.sharding = "ddp"
        else:
            setup.sharding = "fsdp_full_shard"
        if "offload" in words or str(fsdp_conf.get("fsdp_offload_params", "")).lower() == "true":
            setup.offload_optimizer = setup.offload_params = True
    elif ds is not None:
        zero = ds.get("zero_optimization") or {}
        stage = _int(zero.get("stage")) or 0
        setup.sharding = {1: "zero1", 2: "zero2", 3: "zero3"}.get(stage, "ddp")
        setup.offload_optimizer = str((zero.get("offload_optimizer") or {}).get("device", "none")) in ("cpu", "nvme")
        setup.offload_params = str((zero.get("offload_param") or {}).get("device", "none")) in ("cpu", "nvme")
    elif accel.get("deepspeed_config"):
        ds_conf = accel["deepspeed_config"]
        setup.sharding = {1: "zero1", 2: "zero2", 3: "zero3"}.get(_int(ds_conf.get("zero_stage")) or 0, "ddp")
        setup.offload_optimizer = str(ds_conf.get("offload_optimizer_device", "none")) in ("cpu", "nvme")
        setup.offload_params = str(ds_conf.get("offload_param_device", "none")) in ("cpu", "nvme")
    elif settings.get("deepspeed", "ds_file", "deepspeed_config"):
        setup.assumptions.append("DeepSpeed config not given: ZeRO stage unknown, no sharding assumed")
