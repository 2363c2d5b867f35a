"""Which flags the job's script takes, so a fix never proposes one it would reject.

A script takes:
  - every HF `TrainingArguments` field, when the frames, the flags, the launcher or the configs show
    an HF Trainer script (transformers Trainer, TRL, LLaMA-Factory, FastChat, axolotl);
  - the flags already in its command (its argparse knows them), in any spelling;
  - a key already present in a config file the job gave (DeepSpeed JSON, accelerate YAML).
Anything else is a change to the code or a config, which the fix states in words with the value
taken from the log.
"""
from __future__ import annotations

import re

from ..commandline import LaunchCommand, normalise_key

# transformers.TrainingArguments fields a fix may set (names stable since 4.3x).
TRAINING_ARGUMENTS = frozenset("""
output_dir overwrite_output_dir do_train do_eval do_predict eval_strategy evaluation_strategy prediction_loss_only
per_device_train_batch_size per_device_eval_batch_size gradient_accumulation_steps eval_accumulation_steps
eval_delay learning_rate weight_decay adam_beta1 adam_beta2 adam_epsilon max_grad_norm num_train_epochs max_steps
lr_scheduler_type warmup_ratio warmup_steps log_level logging_dir logging_strategy logging_first_step
logging_steps save_strategy save_steps save_total_limit save_safetensors save_only_model seed data_seed
bf16 fp16 fp16_opt_level half_precision_backend bf16_full_eval fp16_full_eval tf32 local_rank ddp_backend
dataloader_drop_last eval_steps dataloader_num_workers dataloader_prefetch_factor dataloader_pin_memory
dataloader_persistent_workers run_name disable_tqdm remove_unused_columns label_names load_best_model_at_end
metric_for_best_model greater_is_better ignore_data_skip fsdp fsdp_config fsdp_min_num_params
fsdp_transformer_layer_cls_to_wrap deepspeed label_smoothing_factor optim optim_args group_by_length
length_column_name report_to ddp_find_unused_parameters ddp_bucket_cap_mb ddp_broadcast_buffers
skip_memory_metrics push_to_hub resume_from_checkpoint gradient_checkpointing gradient_checkpointing_kwargs
include_inputs_for_metrics auto_find_batch_size full_determinism torchdynamo torch_compile ddp_timeout
torch_compile_backend torch_compile_mode neftune_noise_alpha use_liger_kernel average_tokens_across_devices
""".split())
# TRL's SFTConfig / DPOConfig / GRPOConfig add these on top of TrainingArguments.
TRL_ARGUMENTS = frozenset("""
max_seq_length max_length packing dataset_text_field max_prompt_length num_generations beta
""".split())
# LLaMA-Factory's model / data / finetuning arguments (llamafactory-cli train, src/train.py).
LLAMA_FACTORY_ARGUMENTS = frozenset("""
cutoff_len finetuning_type lora_rank lora_alpha lora_target quantization_bit template dataset dataset_dir
preprocessing_num_workers flash_attn model_name_or_path max_samples val_size stage
""".split())
HF_SIGNS = ("transformers/trainer", "trl/trainer", "llamafactory", "llmtuner", "fastchat/train", "axolotl",
            "transformers/training_args", "swift/")
HF_FLAG_SIGNS = {"per_device_train_batch_size", "output_dir", "gradient_accumulation_steps", "do_train",
                 "num_train_epochs", "save_strategy", "logging_steps", "deepspeed", "report_to"}
HF_CLIS = ("llamafactory-cli", "axolotl", "trl", "swift")


class FlagSupport:
    """accepts(key) -> True when the script takes --key; why() says what the judgement rests on."""

    def __init__(self, cmd: LaunchCommand, frames: list[str] | None = None, configs: dict | None = None,
                 evidence: str = "") -> None:
        self.cmd = cmd
        self.seen = {f.key for f in cmd.script_flags}
        frames_text = "\n".join(frames or []).replace("\\", "/").lower()
        signs = [s for s in HF_SIGNS if s in frames_text or s in evidence.lower()]
        paths = [f.rsplit(" in ", 1)[0] for f in frames_text.splitlines()]  # "file in function"
        own_frames = [f for f in paths
                      if f.endswith(".py") and "site-packages" not in f and "dist-packages" not in f
                      and "/lib/python" not in f and not f.startswith("<")]
        known = TRAINING_ARGUMENTS | TRL_ARGUMENTS | LLAMA_FACTORY_ARGUMENTS
        flag_signs = self.seen & (known - {"local_rank", "seed", "learning_rate", "dataset"})
        cli = cmd.launcher in HF_CLIS or (cmd.script or "").split("/")[-1].startswith(("llamafactory", "axolotl"))
        module = cmd.script_is_module and re.match(r"(llamafactory|trl|axolotl|fastchat)", cmd.script or "")
        hf_config = any(isinstance(c, dict) and ("per_device_train_batch_size" in c or "cutoff_len" in c)
                        for c in (configs or {}).values())
        if signs or cli or module:
            self.hf, why = True, ", ".join(signs) or "an HF CLI"
        elif own_frames:  # the traceback shows the script's own loop and no Trainer: the frames decide
            self.hf, why = False, f"the traceback runs through {own_frames[-1].rsplit('/', 1)[-1]} and no HF Trainer"
        else:
            self.hf = bool(flag_signs or hf_config)
            why = f"TrainingArguments names in the command ({', '.join(sorted(flag_signs)[:3])})" if flag_signs \
                else "a training-arguments config"
        self.reason = (f"HF Trainer script: {why}" if self.hf
                       else f"custom script ({why if own_frames else 'no HF Trainer sign'}): only the flags its "
                            "command already passes are known")
        if not cmd.line.tokens:  # no command given: name the HF flag, the user will find where it goes
            self.hf, self.reason = True, "no command given"

    def accepts(self, key: str) -> bool:
        key = normalise_key(key)
        if key in self.seen:
            return True
        if self.hf:
            return key in TRAINING_ARGUMENTS or key in TRL_ARGUMENTS or key in LLAMA_FACTORY_ARGUMENTS
        return False

    def first_accepted(self, keys: tuple[str, ...]) -> str | None:
        """The first alias the script takes: one it already passes wins over a TrainingArguments name."""
        for key in keys:
            if normalise_key(key) in self.seen:
                return key
        return next((key for key in keys if self.accepts(key)), None)
