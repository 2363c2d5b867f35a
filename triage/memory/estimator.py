"""Will it fit? Per-GPU memory of a fine-tuning job, before and after each memory fix.

Ψ = parameters, Ψt = trainable parameters, N = GPUs a shard is spread over, L layers,
h hidden size, a attention heads, s sequence length, b per-device batch, V vocabulary.

  weights     full: 2Ψ bytes (bf16/fp16) or 4Ψ (fp32); LoRA: frozen base 2Ψ (half), 4Ψ (fp32),
              1.1Ψ (8-bit) or 0.55Ψ (4-bit QLoRA incl. quantisation constants) + 4Ψt fp32 adapters;
              Ψt = L x 4 x r x 2h (q, k, v, o adapters); freeze tuning: Ψt = Ψ x N/L (last N layers)
  gradients   2Ψt (half) or 4Ψt (fp32; LoRA adapters are fp32)
  optimizer   AdamW 8Ψt (fp32 m and v) + 4Ψt fp32 master copy under mixed precision;
              8-bit Adam 2Ψt (+4Ψt master); SGD momentum 4Ψt (+4Ψt); Adafactor ~0 (+4Ψt)
  sharding    ZeRO-1: optimizer/N; ZeRO-2 and FSDP SHARD_GRAD_OP: + gradients/N; ZeRO-3 and FSDP
              FULL_SHARD: + weights/N plus two gathered layers (2 x 2Ψ/L in half, 2 x 4Ψ/L in fp32);
              HYBRID_SHARD: N = GPUs per node; CPU offload of the optimizer (ZeRO-Offload, FSDP offload)
              moves it and the gradients (and, with param offload, the weights) off the GPU
  activations Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
              Models", eq. 1, no tensor/sequence parallelism), per layer in half precision:
                s*b*h*(34 + 5*a*s/h) bytes for GPT-style layers (4h GeLU MLP); gated (SwiGLU)
                decoders are counted tensor by tensor the same way (layer_elements: norms, q/k/v,
                RoPE, attention output, gate/up/SiLU/product of width i, fp32 where autocast keeps
                the residual stream); flash/SDPA attention does not store the 5*a*s*s*b scores.
              all layers: L x per layer; with gradient checkpointing only each layer's input
              is kept (L x s*b*h) plus one layer recomputed at a time (1 x per layer).
              logits: s*b*V*(2 + 4 + 4 + 4) bytes in half, 12 in fp32 (logits, the fp32 upcast for
              the loss, the saved log-softmax and its gradient)
  overhead    0.75 GiB CUDA context/cuBLAS workspace + 10% of the rest for allocator fragmentation
  calibration when an OOM message is known and the total above is below what the failed step needed
              (capacity - free + tried), every total is scaled by need/total: the estimate must at least
              explain the OOM that happened ("model_total_gib" keeps the unscaled figure)
It counts activations, unlike accelerate's and DeepSpeed's model-only estimators.
"""
from __future__ import annotations

import copy
from dataclasses import replace

from .setup import Setup, read_setup

GIB = 2**30
CONTEXT_GIB = 0.75
FRAGMENTATION = 0.10
FORMULAS = [
    "weights = 2 bytes x params (bf16/fp16) or 4 (fp32); LoRA: frozen base 2 (half) / 1.1 (8-bit) / 0.55 (4-bit) "
    "+ 4 x adapter params; adapter params = L x 4 x r x 2h; freeze tuning trains params x N/L",
    "gradients = 2 bytes x trainable params (half) or 4 (fp32 / LoRA adapters)",
    "optimizer = AdamW 8 bytes x trainable (+4 fp32 master under mixed precision); 8-bit Adam 2 (+4); SGD 4 (+4)",
    "ZeRO-1 optimizer/N; ZeRO-2 (FSDP SHARD_GRAD_OP) also gradients/N; ZeRO-3 (FSDP FULL_SHARD) also weights/N "
    "+ 2 gathered layers; HYBRID_SHARD N = GPUs per node; CPU offload removes optimizer (and params) from the GPU",
    "activations per layer = s*b*h*(34 + 5*a*s/h) bytes in half precision (Korthikanti et al. 2022); "
    "gated (SwiGLU) decoders: s*b*h*(norms 4 + q,k,v 1+2r + RoPE 1+r + out 2 + MLP 4i/h) elements, fp32 where "
    "autocast keeps the residual stream; flash/SDPA attention drops the 5*a*s*s*b scores; fp32 x2; all layers "
    "x L; the kernel is inferred from flags, frames and versions, and an unknown one is shown as a range",
    "gradient checkpointing: L*s*b*h (layer inputs) + one layer's activations",
    "logits = s*b*V*14 bytes in half, 12 in fp32 (logits, fp32 upcast, saved log-softmax, its gradient)",
    f"overhead = {CONTEXT_GIB} GiB CUDA context + {int(FRAGMENTATION * 100)}% allocator fragmentation",
    "calibration: if the OOM shows more in use than estimated, totals x (capacity - free + requested) / estimate",
]
HALF = ("bf16", "fp16")


def _trainable(setup: Setup) -> float:
    if setup.finetuning == "full":
        return setup.shape.params
    if setup.finetuning == "freeze":  # the last N transformer layers
        return setup.shape.params * min(setup.trainable_layers, setup.shape.layers) / setup.shape.layers
    # adapters on q, k, v, o of every layer: 4 modules x r x (h + h)
    return setup.shape.layers * 4 * setup.lora_rank * 2 * setup.shape.hidden


def components(setup: Setup) -> dict[str, float]:
    """Bytes per GPU of each component (see the module docstring)."""
    params, trainable = setup.shape.params, _trainable(setup)
    half = setup.precision in HALF
    n = max(setup.shard_group, 1)
    if setup.finetuning in ("full", "freeze"):
        weights = params * (2 if half else 4)
        gradients = trainable * (2 if half else 4)
        master = 4 * trainable if half else 0
    else:
        base = {"qlora": 0.55, "lora_8bit": 1.1}.get(setup.finetuning, 2 if half else 4)
        weights = params * base + trainable * 4
        gradients, master = trainable * 4, 0
    state = {"adamw": 8, "adam8bit": 2, "sgd": 4, "adafactor": 0}[setup.optimizer]
    optimizer = trainable * state + master
    sharding = setup.sharding
    if sharding in ("zero1", "zero2", "zero3") or sharding.startswith("fsdp"):
        optimizer /= n
    if sharding in ("zero2", "zero3", "fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard"):
        gradients /= n
    if sharding in ("zero3", "fsdp_full_shard", "fsdp_hybrid_shard"):
        weights = (0 if setup.offload_params else weights / n) + zero3_working_set(setup)
    if setup.offload_optimizer:
        optimizer = 0
        if sharding.startswith("fsdp") or sharding in ("zero1", "zero2", "zero3"):
            gradients = 0  # ZeRO-Offload and FSDP CPU offload keep the (fp32) gradients with the optimizer
    return {"weights": weights, "gradients": gradients, "optimizer": optimizer,
            "activations": activations(setup)}


def zero3_working_set(setup: Setup) -> float:
    """Bytes of the two layers ZeRO-3 / FULL_SHARD gathers at a time (the current one and the prefetched one),
    in the precision the layers compute in."""
    if setup.sharding not in ("zero3", "fsdp_full_shard", "fsdp_hybrid_shard"):
        return 0.0
    return 2 * (setup.shape.params / setup.shape.layers) * 2


def layer_elements(setup: Setup) -> tuple[float, float]:
    """(tensors kept in the compute precision, tensors kept in fp32) per layer, in units of s*b*h elements.

    GPT-style MLP (4h, GeLU): Korthikanti et al.'s 34 bytes in half precision = 17 elements.
    Gated (SwiGLU) decoders, counted the same way for their own layer (HF Llama-style code):
      2 RMSNorms (input, normalised)          4
      q, k, v (k, v scaled by kv heads / heads) 1 + 2r;  RoPE-rotated q, k  1 + r
      attention output, o_proj input          2
      MLP: gate, up, SiLU(gate), product      4 x i/h (3 x i/h under LoRA: a frozen down_proj keeps no input)
    Under autocast (HF --bf16/--fp16 with fp32 weights, no DeepSpeed/FSDP) the residual stream stays fp32:
    the norms and the RoPE outputs are fp32 and SDPA casts q, k, v (1 + 2r more half tensors).
    Pure half precision (DeepSpeed/FSDP bf16, or weights loaded in half) keeps two fp32 RMSNorm upcasts."""
    shape = setup.shape
    if not shape.gated:
        return (17.0, 0.0) if setup.precision in HALF else (0.0, 17.0)
    r, width = shape.kv_ratio, (shape.intermediate or 4 * shape.hidden) / shape.hidden
    norms, rope, attention, mlp = 4.0, 1 + r, (1 + 2 * r) + 2, 4 * width
    if setup.finetuning not in ("full", "freeze"):  # frozen down_proj: its input is not kept
        mlp = 3 * width
    if setup.precision not in HALF:
        return 0.0, norms + rope + attention + mlp
    if setup.sharding == "ddp" and setup.finetuning == "full" and not setup.half_weights:
        return attention + mlp + (1 + 2 * r), norms + rope
    return norms + rope + attention + mlp, 2.0


def activations(setup: Setup) -> float:
    """Bytes of activations kept for the backward pass (see layer_elements and the module docstring)."""
    s, b = setup.seq, setup.batch
    h, a, layers, vocab = setup.shape.hidden, setup.shape.heads, setup.shape.layers, setup.shape.vocab
    half = setup.precision in HALF
    low, full = layer_elements(setup)
    per_layer = s * b * h * (low * 2 + full * 4)
    if not setup.flash:  # eager attention keeps a*s*s*b scores: Korthikanti's 5 bytes each in half
        per_layer += a * s * s * b * score_bytes(setup)
    layer_input = s * b * h * (2 if half and not _autocast(setup) else 4)
    body = (layers * layer_input + per_layer) if setup.checkpointing else layers * per_layer
    # logits in the compute precision, their fp32 upcast for the loss, the saved log-softmax and its gradient
    logits = s * b * vocab * ((2 + 4 + 4 + 4) if half else 12)
    return body + logits


def score_bytes(setup: Setup) -> float:
    """Bytes kept per attention-score element by eager attention.
    GPT-style (Korthikanti): softmax output 2 + dropout mask 1 + dropout output 2 = 5 in half, x2 in fp32.
    HF gated decoders (no attention dropout; softmax taken in fp32): the fp32 softmax output kept by softmax
    (4) plus its half-precision cast kept by the matmul with V (2) = 6 in half, 4 in fp32."""
    half = setup.precision in HALF
    if setup.shape.gated:
        return 6.0 if half else 4.0
    return 5.0 if half else 10.0


def _autocast(setup: Setup) -> bool:
    return setup.precision in HALF and setup.sharding == "ddp" and setup.finetuning == "full" \
        and not setup.half_weights


def _total(parts: dict[str, float]) -> tuple[dict[str, float], float]:
    subtotal = sum(parts.values())
    overhead = CONTEXT_GIB * GIB + FRAGMENTATION * subtotal
    gib = {k: round(v / GIB, 2) for k, v in parts.items()}
    gib["overhead"] = round(overhead / GIB, 2)
    return gib, round((subtotal + overhead) / GIB, 2)


def stronger_sharding(setup: Setup) -> Setup | None:
    """The next step up: DDP -> FSDP FULL_SHARD (or ZeRO-3 offload on one GPU), ZeRO-1 -> 2 -> 3,
    SHARD_GRAD_OP -> FULL_SHARD, then CPU offload of the optimizer, then of the parameters."""
    nxt = copy.deepcopy(setup)
    if setup.sharding == "ddp":
        nxt.sharding = "fsdp_full_shard" if setup.world > 1 else "zero3"
        nxt.offload_optimizer = setup.world == 1
    elif setup.sharding in ("zero1", "zero2"):
        nxt.sharding = "zero3"
    elif setup.sharding == "fsdp_shard_grad_op":
        nxt.sharding = "fsdp_full_shard"
    elif not setup.offload_optimizer:
        nxt.offload_optimizer = True
        nxt.offload_params = setup.sharding.startswith("fsdp")
    elif not setup.offload_params:
        nxt.offload_params = True
    else:
        return None
    return nxt


def variants(setup: Setup) -> list[tuple[str, Setup]]:
    """The setup after each memory fix the engine proposes."""
    out = []
    if setup.batch > 1:
        out.append(("reduce_batch_size", replace(setup, batch=max(setup.batch // 2, 1))))
    if not setup.checkpointing:
        out.append(("enable_gradient_checkpointing", replace(setup, checkpointing=True)))
    if setup.precision not in HALF:
        out.append(("enable_mixed_precision", replace(setup, precision="bf16")))
    if setup.seq > 256:
        out.append(("reduce_seq_len", replace(setup, seq=setup.seq // 2)))
    stronger = stronger_sharding(setup)
    if stronger is not None:
        out.append(("shard_more", stronger))
    if len(out) > 1:  # everything together, in the order above
        combined = setup
        for _kind, variant in out:
            combined = replace(
                combined, batch=min(combined.batch, variant.batch), seq=min(combined.seq, variant.seq),
                checkpointing=combined.checkpointing or variant.checkpointing,
                precision=variant.precision if variant.precision in HALF else combined.precision,
            )
        if stronger is not None:
            combined = replace(combined, sharding=stronger.sharding, offload_optimizer=stronger.offload_optimizer,
                               offload_params=stronger.offload_params)
        out.append(("combined", combined))
    return out


def describe_sharding(setup: Setup) -> str:
    text = setup.sharding
    if setup.offload_optimizer:
        text += "+offload_optimizer"
    if setup.offload_params:
        text += "+offload_params"
    return text + (f" over {setup.shard_group} GPU(s)" if setup.sharding != "ddp" else "")


GPU_GIB = [("h200", 141), ("h100", 80), ("a100-sxm4-40", 40), ("a100-pcie-40", 40), ("a100 40", 40),
           ("a100", 80), ("a800", 80), ("h800", 80), ("l40", 48), ("a6000", 48), ("a40", 48), ("a10g", 24),
           ("a10", 24), ("l4", 24), ("4090", 24), ("3090", 24), ("v100-sxm2-32", 32), ("v100", 16), ("t4", 16)]


def calibration(model_total_gib: float, oom: dict | None) -> tuple[float, float | None]:
    """(factor, observed need in GiB): the failed step needed at least the memory in use when it failed
    plus the request that failed (capacity - free + tried). A model total below that is scaled up to it."""
    numbers = [(oom or {}).get(k) for k in ("capacity_mib", "free_mib", "tried_mib")]
    if not all(isinstance(n, int | float) for n in numbers) or model_total_gib <= 0:
        return 1.0, None
    need = round((numbers[0] - numbers[1] + numbers[2]) / 1024, 2)
    return (round(need / model_total_gib, 3), need) if need > model_total_gib else (1.0, need)


def capacity_from(oom: dict | None, facts: dict) -> float | None:
    """GPU memory in GiB: the OOM message's total capacity, else facts (gpu_capacity_gib or a GPU name)."""
    if oom and isinstance(oom.get("capacity_mib"), int | float):
        return round(oom["capacity_mib"] / 1024, 2)
    for key in ("gpu_capacity_gib", "gpu_memory_gib"):
        if (facts or {}).get(key):
            return float(facts[key])
    name = str((facts or {}).get("gpu_name") or "").lower()
    return next((float(gib) for key, gib in GPU_GIB if name and key in name), None)


UNKNOWN_RANGES = {  # input -> (Setup field, low end, high end, what the page calls it)
    "batch": ("batch", 1, 8, "per-device batch"),
    "seq": ("seq", 512, 4096, "sequence length"),
    "attention": ("flash", True, False, "attention kernel (SDPA/flash .. eager)"),
}


def _ends(setup: Setup) -> tuple[Setup, Setup]:
    low, high = setup, setup
    for name in setup.unknown:
        field, low_value, high_value, _ = UNKNOWN_RANGES[name]
        low, high = replace(low, **{field: low_value}), replace(high, **{field: high_value})
    return low, high


def reconcile(model_total: float, need: float | None, capacity: float | None, oom: dict | None,
              low: float | None, high: float | None) -> dict | None:
    """Set the estimate beside what the log shows the failed step needed (memory in use + the request)."""
    if need is None:
        return None
    in_use = round(((oom or {}).get("capacity_mib", 0) - (oom or {}).get("free_mib", 0)) / 1024, 2)
    if model_total < need:
        verdict = "calibrated"
        text = (f"the log shows the failed step needed at least {need} GiB ({in_use} GiB in use + the request), "
                f"more than the model-based {model_total} GiB: the gap ({round(need - model_total, 2)} GiB) is memory "
                "the formulas do not see (other processes, caching allocator, buffers); totals are scaled to it")
    elif low is not None and high is not None and low <= need <= high:
        verdict = "within range"
        text = f"what the failed step needed ({need} GiB) lies within the estimate's range {low}-{high} GiB"
    else:
        verdict = "consistent"
        text = (f"the estimate ({model_total} GiB) is at or above what the failed step needed "
                f"({need} GiB, a lower bound: the step would have taken more)")
    return {"observed_need_gib": need, "in_use_gib": in_use, "model_total_gib": model_total,
            "capacity_gib": capacity, "verdict": verdict, "text": text}


def estimate(command: str | None, configs: dict | None, facts: dict | None, *, oom: dict | None = None,
             world_size: int | None = None, overrides: dict | None = None,
             capacity_gib: float | None = None, frames: list[str] | None = None, evidence: str = "") -> dict | None:
    """The estimate dict (see module docstring), or None without a model name or config.json.

    oom: the collector's OOM dict (its capacity_mib is the GPU size); capacity_gib overrides it;
    overrides: Setup fields to change before estimating (e.g. {"batch": 2});
    frames / evidence: the traceback's files and log text, to infer the attention kernel and versions."""
    try:
        setup = read_setup(command, configs or {}, facts or {}, world_size, frames=frames, evidence=evidence)
    except Exception:  # an estimate is a bonus; odd input must never break a diagnosis
        return None
    if setup is None:
        return None
    capacity = capacity_gib or capacity_from(oom, facts or {})
    factor, need = calibration(_total(components(setup))[1], oom)
    if factor > 1:
        setup.assumptions.append(
            f"the model-based total is below what the failed step needed ({need} GiB in use + requested): "
            f"every total is scaled by {factor}, assuming the unexplained memory grows with the rest")
    if overrides:
        setup = replace(setup, **{k: v for k, v in overrides.items() if hasattr(setup, k)})
        setup.unknown = [u for u in setup.unknown if UNKNOWN_RANGES[u][0] not in overrides]

    def judged(one: Setup) -> tuple[dict, float, float, bool | None]:
        parts, raw = _total(components(one))
        total = round(raw * factor, 2)
        return parts, raw, total, (None if capacity is None else total <= capacity)

    def spread(one: Setup) -> list[float] | None:
        if not one.unknown:
            return None
        low, high = _ends(one)
        return sorted([judged(low)[2], judged(high)[2]])

    parts, raw, total, fits = judged(setup)
    total_range = spread(setup)
    if total_range and capacity is not None:  # unknown inputs: it fits only if the whole range does
        fits = True if total_range[1] <= capacity else False if total_range[0] > capacity else None
    after = []
    for kind, variant in variants(setup):
        v_parts, v_raw, v_total, v_fits = judged(variant)
        v_range = spread(variant)
        if v_range and capacity is not None:
            v_fits = True if v_range[1] <= capacity else False if v_range[0] > capacity else None
        after.append({"kind": kind, "total_gib": v_total, "model_total_gib": v_raw, "fits": v_fits,
                      "range_gib": v_range, "components_gib": v_parts, "change": _change(setup, variant)})
    return {
        "model": setup.shape.name, "params": int(setup.shape.params), "params_source": setup.shape.source,
        "trainable_params": int(_trainable(setup)), "precision": setup.precision, "optimizer": setup.optimizer,
        "finetuning": setup.finetuning, "sharding": describe_sharding(setup), "world_size": setup.world,
        "batch": setup.batch, "seq_len": setup.seq, "gradient_checkpointing": setup.checkpointing,
        "flash_attention": setup.flash, "attention": setup.attention, "attention_reason": setup.attention_reason,
        "unknown_inputs": [{"input": UNKNOWN_RANGES[u][3], "range": list(UNKNOWN_RANGES[u][1:3])}
                           for u in setup.unknown],
        "range_gib": total_range,
        "reconciliation": reconcile(raw, need, capacity, oom, *(total_range or (None, None))),
        "components_gib": parts, "total_gib": total, "model_total_gib": raw,
        "calibration": {"observed_need_gib": need, "factor": factor} if factor > 1 else None, "capacity_gib": capacity,
        "fits": fits, "after_fixes": after,
        "fits_after": next((a["kind"] for a in after if a["fits"]), None),
        "formulas": FORMULAS, "assumptions": setup.assumptions,
    }


def _change(before: Setup, after: Setup) -> str:
    fields = ("batch", "seq", "checkpointing", "precision")
    changed = [f"{f} {getattr(before, f)} -> {getattr(after, f)}" for f in fields if getattr(before, f) != getattr(after, f)]
    if describe_sharding(before) != describe_sharding(after):
        changed.append(f"{describe_sharding(before)} -> {describe_sharding(after)}")
    return "; ".join(changed)
