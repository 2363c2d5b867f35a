"""Model shapes: parameter count, layers, hidden size, heads, vocabulary.

From a name (`meta-llama/Llama-2-7b-hf`, `/data/longchat-13b-16k`, `Qwen2.5-0.5B-Instruct`,
`gpt2-medium`) via a table of common open families, or from a HF `config.json`.
Parameter count from a config (decoder-only, per layer):
  attention  h*h (q) + 2*h*kv (k, v; kv = h*kv_heads/heads) + h*h (o)
  MLP        3*h*i when gated (SwiGLU: llama, mistral, qwen2, gemma ...) else 2*h*i; x experts (MoE)
  total      L*(attention + MLP) + V*h (embeddings) + V*h again unless tie_word_embeddings
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelShape:
    name: str
    params: float  # parameters
    layers: int
    hidden: int
    heads: int
    vocab: int
    source: str  # "table" | "config.json" | "size in name"
    intermediate: int = 0  # MLP width (0: not known; 4h assumed)
    gated: bool = False  # SwiGLU-style MLP (gate, up, down): llama, mistral, qwen ...
    kv_ratio: float = 1.0  # key/value heads / attention heads (grouped-query attention < 1)


# family -> {size label: (params in billions, layers, hidden, heads, vocab)}
_LLAMA1 = {"7b": (6.74, 32, 4096, 32, 32000), "13b": (13.0, 40, 5120, 40, 32000),
           "30b": (32.5, 60, 6656, 52, 32000), "33b": (32.5, 60, 6656, 52, 32000),
           "65b": (65.2, 80, 8192, 64, 32000), "70b": (69.0, 80, 8192, 64, 32000)}
_QWEN = {"0.5b": (0.49, 24, 896, 14, 151936), "1.5b": (1.54, 28, 1536, 12, 151936),
         "1.8b": (1.84, 24, 2048, 16, 151936), "3b": (3.09, 36, 2048, 16, 151936),
         "4b": (3.95, 40, 2560, 20, 151936), "7b": (7.62, 28, 3584, 28, 152064),
         "14b": (14.8, 48, 5120, 40, 152064), "32b": (32.8, 64, 5120, 40, 152064),
         "72b": (72.7, 80, 8192, 64, 152064)}
FAMILIES: list[tuple[str, dict]] = [
    (r"mixtral", {"8x7b": (46.7, 32, 4096, 32, 32000), "8x22b": (140.6, 56, 6144, 48, 32768)}),
    (r"llama-?3(?!\d)", {"1b": (1.24, 16, 2048, 32, 128256), "3b": (3.21, 28, 3072, 24, 128256),
                          "8b": (8.03, 32, 4096, 32, 128256), "70b": (70.6, 80, 8192, 64, 128256),
                          "405b": (405.9, 126, 16384, 128, 128256)}),
    (r"tinyllama", {"1.1b": (1.1, 22, 2048, 32, 32000)}),
    (r"llama|vicuna|alpaca|longchat|codellama|wizardlm|koala|guanaco", _LLAMA1),
    (r"mistral|zephyr", {"7b": (7.24, 32, 4096, 32, 32000)}),
    (r"qwen", _QWEN),
    (r"gemma-?2(?![\db.])", {"2b": (2.61, 26, 2304, 8, 256000), "9b": (9.24, 42, 3584, 16, 256000),
                   "27b": (27.2, 46, 4608, 32, 256000)}),
    (r"gemma", {"2b": (2.51, 18, 2048, 8, 256000), "7b": (8.54, 28, 3072, 16, 256000)}),
    (r"phi-?3", {"mini": (3.82, 32, 3072, 32, 32064), "3.8b": (3.82, 32, 3072, 32, 32064),
                 "medium": (14.0, 40, 5120, 40, 32064), "14b": (14.0, 40, 5120, 40, 32064)}),
    (r"phi-?2", {"": (2.78, 32, 2560, 32, 51200)}),
    (r"phi-?1[._]5", {"": (1.42, 24, 2048, 32, 51200)}),
    (r"falcon", {"7b": (7.22, 32, 4544, 71, 65024), "40b": (41.8, 60, 8192, 128, 65024)}),
    (r"bloom", {"560m": (0.56, 24, 1024, 16, 250880), "1b1": (1.07, 24, 1536, 16, 250880),
                "1b7": (1.72, 24, 2048, 16, 250880), "3b": (3.0, 30, 2560, 32, 250880),
                "7b1": (7.07, 30, 4096, 32, 250880)}),
    (r"\bopt|/opt|^opt", {"125m": (0.125, 12, 768, 12, 50272), "350m": (0.331, 24, 1024, 16, 50272),
                          "1.3b": (1.32, 24, 2048, 32, 50272), "2.7b": (2.65, 32, 2560, 32, 50272),
                          "6.7b": (6.66, 32, 4096, 32, 50272), "13b": (12.9, 40, 5120, 40, 50272),
                          "30b": (30.0, 48, 7168, 56, 50272), "66b": (65.7, 64, 9216, 72, 50272)}),
    (r"gpt2", {"xl": (1.56, 48, 1600, 25, 50257), "large": (0.774, 36, 1280, 20, 50257),
               "medium": (0.355, 24, 1024, 16, 50257), "": (0.124, 12, 768, 12, 50257)}),
    (r"t5", {"small": (0.06, 12, 512, 8, 32128), "base": (0.22, 24, 768, 12, 32128),
             "large": (0.74, 48, 1024, 16, 32128), "xl": (2.85, 48, 2048, 32, 32128),
             "3b": (2.85, 48, 1024, 32, 32128), "xxl": (11.3, 48, 4096, 64, 32128),
             "11b": (11.3, 48, 1024, 128, 32128)}),
    (r"chatglm|glm-?4", {"6b": (6.24, 28, 4096, 32, 65024), "9b": (9.4, 40, 4096, 32, 151552)}),
    (r"baichuan", {"7b": (7.0, 32, 4096, 32, 64000), "13b": (13.3, 40, 5120, 40, 64000)}),
    (r"starcoder", {"15b": (15.5, 40, 6144, 48, 49152), "7b": (7.2, 32, 4608, 36, 49152)}),
]
# generic decoder shapes by size, for names that state a size but no family we know
_GENERIC = [(0.5, 24, 1024, 16), (1.5, 24, 2048, 16), (3.5, 28, 3072, 24), (8, 32, 4096, 32),
            (15, 40, 5120, 40), (40, 60, 6656, 52), (1e9, 80, 8192, 64)]
_SIZE = re.compile(r"(?<![\w.])(?:\d+x)?(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.I)


def _label_in(name: str, label: str) -> bool:
    if not label:
        return True
    return re.search(rf"(?<![\w.]){re.escape(label)}(?![\w])", name.replace("_", "-")) is not None


def shape_from_name(model_name: str | None) -> ModelShape | None:
    if not model_name:
        return None
    name = model_name.lower().rstrip("/")
    tail = "/".join(name.split("/")[-2:])
    for pattern, sizes in FAMILIES:
        if not re.search(pattern, tail):
            continue
        for label in sorted(sizes, key=len, reverse=True):
            if _label_in(tail, label):
                params, layers, hidden, heads, vocab = sizes[label]
                gated = bool(re.search(_GATED_NAMES, tail))
                return ModelShape(model_name, params * 1e9, layers, hidden, heads, vocab, "table",
                                  intermediate=_mlp_width(params * 1e9, layers, hidden, vocab, gated), gated=gated)
    match = _SIZE.search(tail.replace("_", "-"))
    if not match:
        return None
    billions = float(match.group(1)) / (1000 if match.group(2).lower() == "m" else 1)
    if "x" in match.group(0).lower():  # 8x7b mixture of experts: shared attention, roughly 0.8 x n x size
        billions *= float(match.group(0).lower().split("x")[0]) * 0.8
    layers, hidden, heads = next((lay, hid, hd) for top, lay, hid, hd in _GENERIC if billions <= top)
    return ModelShape(model_name, billions * 1e9, layers, hidden, heads, 32000, "size in name")


_GATED_NAMES = r"llama|vicuna|alpaca|longchat|codellama|wizardlm|koala|guanaco|mistral|mixtral|zephyr|qwen|gemma|phi-?3|baichuan|yi|deepseek|internlm"


def _mlp_width(params: float, layers: int, hidden: int, vocab: int, gated: bool) -> int:
    """The MLP width a table shape implies: per layer, params - 4h^2 (attention) = (3 if gated else 2) x h x i."""
    per_layer = (params - 2 * vocab * hidden) / max(layers, 1)
    width = (per_layer - 4 * hidden * hidden) / ((3 if gated else 2) * hidden)
    return int(width) if width > hidden else 4 * hidden


_GATED = ("llama", "mistral", "mixtral", "qwen", "gemma", "phi3", "internlm", "baichuan", "yi", "deepseek", "chatglm")


def shape_from_config(config: dict | None, name: str = "config.json") -> ModelShape | None:
    """Parameter count from a HF config.json (see the module docstring for the formula)."""
    if not isinstance(config, dict):
        return None
    get = config.get
    hidden = get("hidden_size") or get("n_embd") or get("d_model")
    layers = get("num_hidden_layers") or get("n_layer") or get("num_layers")
    if not isinstance(hidden, int) or not isinstance(layers, int):
        return None
    heads = get("num_attention_heads") or get("n_head") or get("num_heads") or max(hidden // 128, 1)
    kv_heads = get("num_key_value_heads") or get("multi_query_group_num") or heads
    inter = get("intermediate_size") or get("ffn_hidden_size") or get("n_inner") or get("d_ff") or 4 * hidden
    vocab = get("vocab_size") or get("padded_vocab_size") or 32000
    model_type = str(get("model_type") or "").lower()
    gated = any(t in model_type for t in _GATED) or str(get("hidden_act", "")) in ("silu", "swiglu")
    experts = get("num_local_experts") or get("num_experts") or 1
    attention = 2 * hidden * hidden + 2 * hidden * (hidden * kv_heads // heads)
    mlp = (3 if gated else 2) * hidden * inter * experts
    tied = get("tie_word_embeddings", model_type in ("gpt2", "t5", "gemma", "gemma2"))
    params = layers * (attention + mlp) + vocab * hidden * (1 if tied else 2)
    return ModelShape(name, float(params), layers, hidden, heads, vocab, "config.json", intermediate=int(inter),
                      gated=gated, kv_ratio=kv_heads / heads if heads else 1.0)
