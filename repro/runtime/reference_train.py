"""Reference fine-tuning script with the Hugging Face flag set (HfArgumentParser + Trainer).

Used when the user uploaded no script: flags are parsed and validated by the installed
transformers exactly as in a typical FastChat/Alpaca/TRL-style train.py, so a renamed or removed
flag, a contradictory combination, an FSDP wrap class that does not exist, a chat template that
fails or rows of the wrong layout fail here the way they failed in the job. The data layout the
script reads comes from TRIAGE_EXPECT_FORMAT (default: the first row's).
"""
import os
import sys
from dataclasses import dataclass, field

import torch
import transformers
from sft_data import SFTDataset, read_rows
from transformers import AutoModelForCausalLM, AutoTokenizer, HfArgumentParser, Trainer


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="/work/tiny-model")
    trust_remote_code: bool = False
    torch_dtype: str = "float32"
    attn_implementation: str = "eager"
    use_lora: bool = False
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    lora_target_modules: str = "q_proj,v_proj"


@dataclass
class DataArguments:
    data_path: str = field(default="/work/in/data.json")
    eval_data_path: str = None
    lazy_preprocess: bool = True
    dataset_text_field: str = "text"
    conv_template: str = None
    use_chat_template: bool = False


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    cache_dir: str = None
    model_max_length: int = 128
    max_seq_length: int = None
    cutoff_len: int = None
    optim: str = "adamw_torch"


class Collator:
    def __init__(self, pad_id):
        self.pad_id = pad_id

    def __call__(self, features):
        longest = max(len(f["input_ids"]) for f in features)
        ids = [f["input_ids"] + [self.pad_id] * (longest - len(f["input_ids"])) for f in features]
        labels = [f["labels"] + [-100] * (longest - len(f["labels"])) for f in features]
        mask = [[1] * len(f["input_ids"]) + [0] * (longest - len(f["input_ids"])) for f in features]
        return {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels), "attention_mask": torch.tensor(mask)}


def main():
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    rank = int(os.environ.get("RANK", "0"))
    print(f"[rank{rank}] loading model from {model_args.model_name_or_path}", flush=True)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path, cache_dir=training_args.cache_dir)
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path,
                                                 trust_remote_code=model_args.trust_remote_code,
                                                 attn_implementation=model_args.attn_implementation)
    if model_args.use_lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(
            r=model_args.lora_r, lora_alpha=model_args.lora_alpha, lora_dropout=model_args.lora_dropout,
            target_modules=model_args.lora_target_modules.split(","), task_type="CAUSAL_LM"))
    if training_args.gradient_checkpointing:
        model.config.use_cache = False
    max_length = training_args.max_seq_length or training_args.cutoff_len or training_args.model_max_length
    print(f"[rank{rank}] Loading data from {data_args.data_path} ...", flush=True)
    rows = read_rows(data_args.data_path)

    def encode(text):
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    if data_args.use_chat_template:
        def encode(text):  # noqa: F811 - the chat-template path
            return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=True)

    dataset = SFTDataset(rows, os.environ.get("TRIAGE_EXPECT_FORMAT", "auto"), encode=encode,
                         max_length=max_length, pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id)
    evaluating = str(getattr(training_args, "eval_strategy", "no")).lower() not in ("no", "intervalstrategy.no")
    trainer = Trainer(model=model, args=training_args, train_dataset=dataset,
                      eval_dataset=dataset if evaluating else None, data_collator=Collator(tokenizer.pad_token_id))
    trainer.train()
    print(f"[rank{rank}] training finished", flush=True)
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown of gloo/dataloader threads (seconds on a busy CPU)


if __name__ == "__main__":
    sys.exit(main())
