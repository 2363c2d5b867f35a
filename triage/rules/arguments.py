"""Names of the training arguments that current releases of transformers, TRL and PEFT take.

A keyword a library refuses that is one or two letters off one of these ("per_device_train_bach_size") is
a misspelt setting in the user's flags or config, not an argument a release removed (those are far
from every current name: "per_gpu_train_batch_size", "evaluation_strategy").
"""

from __future__ import annotations

import difflib

CURRENT = frozenset({
    # transformers.TrainingArguments
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "eval_strategy", "per_device_train_batch_size",
    "per_device_eval_batch_size", "gradient_accumulation_steps", "eval_accumulation_steps", "learning_rate",
    "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm", "num_train_epochs", "max_steps",
    "lr_scheduler_type", "warmup_ratio", "warmup_steps", "logging_dir", "logging_strategy", "logging_steps",
    "save_strategy", "save_steps", "save_total_limit", "save_safetensors", "seed", "data_seed", "bf16", "fp16",
    "tf32", "dataloader_num_workers", "dataloader_pin_memory", "dataloader_drop_last", "eval_steps", "run_name",
    "remove_unused_columns", "label_names", "load_best_model_at_end", "metric_for_best_model",
    "greater_is_better", "deepspeed", "fsdp", "fsdp_config", "optim", "report_to", "ddp_timeout",
    "ddp_find_unused_parameters", "ddp_backend", "gradient_checkpointing", "gradient_checkpointing_kwargs",
    "resume_from_checkpoint", "push_to_hub", "hub_model_id", "torch_compile", "group_by_length",
    "label_smoothing_factor", "use_cpu", "local_rank", "auto_find_batch_size", "include_num_input_tokens_seen",
    # TRL configs
    "max_length", "max_seq_length", "max_prompt_length", "max_completion_length", "packing",
    "dataset_text_field", "dataset_num_proc", "completion_only_loss", "assistant_only_loss", "beta",
    "num_generations", "use_vllm", "vllm_mode", "reward_weights", "loss_type",
    # PEFT LoraConfig and model loading
    "lora_alpha", "lora_dropout", "target_modules", "modules_to_save", "task_type", "bias", "use_rslora",
    "use_dora", "layers_to_transform", "torch_dtype", "attn_implementation", "trust_remote_code",
    "load_in_4bit", "load_in_8bit", "device_map", "low_cpu_mem_usage",
})


def misspelling_of(name: str) -> str | None:
    """The current argument name ``name`` is a misspelling of (one or two letters off), or None."""
    if not name or name in CURRENT:
        return None
    close = difflib.get_close_matches(name, CURRENT, n=1, cutoff=0.9)
    if close and abs(len(close[0]) - len(name)) <= 2:
        return close[0]
    return None
