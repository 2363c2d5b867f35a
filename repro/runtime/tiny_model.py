"""Build a tiny random-initialised causal LM of one architecture family, with a byte-level tokenizer.

    python tiny_model.py llama /work/tiny-model [--hidden 64 --layers 2]
"""
import argparse
import json
import sys

FAMILIES = {
    # family: (model_type, extra config keys)
    "llama": ("llama", {}),
    "mistral": ("mistral", {"sliding_window": None}),
    "qwen2": ("qwen2", {}),
    "qwen3": ("qwen3", {}),
    "gemma": ("gemma", {"head_dim": 16}),
    "gemma2": ("gemma2", {"head_dim": 16}),
    "phi3": ("phi3", {}),
    "phi": ("phi", {}),
    "gpt2": ("gpt2", {}),
    "gpt_neox": ("gpt_neox", {}),
    "falcon": ("falcon", {}),
    "opt": ("opt", {}),
    "bloom": ("bloom", {}),
}
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: index for index, symbol in enumerate(sorted(alphabet))}
    for special in ("<unk>", "<s>", "</s>", "<pad>"):
        vocab[special] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", bos_token="<s>",
                                        eos_token="</s>", pad_token="<pad>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_config(family: str, vocab_size: int, hidden: int, layers: int):
    from transformers import AutoConfig

    model_type, extra = FAMILIES.get(family, FAMILIES["llama"])
    common = {
        "vocab_size": vocab_size, "hidden_size": hidden, "num_hidden_layers": layers,
        "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": hidden * 2,
        "max_position_embeddings": 512, "n_embd": hidden, "n_layer": layers, "n_head": 4,
        "n_positions": 512, "ffn_dim": hidden * 2, "word_embed_proj_dim": hidden,
        "bos_token_id": vocab_size - 3, "eos_token_id": vocab_size - 2, "pad_token_id": vocab_size - 1,
        "tie_word_embeddings": True,
    }
    common.update(extra)
    return AutoConfig.for_model(model_type, **common)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("family")
    parser.add_argument("out")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args(argv)
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    tokenizer = build_tokenizer()
    config = build_config(args.family, len(tokenizer), args.hidden, args.layers)
    model = AutoModelForCausalLM.from_config(config)
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"tiny_model": config.model_type, "params": params, "path": args.out}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
