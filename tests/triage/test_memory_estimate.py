"""The "will it fit" estimator against figures computed by hand (GiB = 2**30 bytes)."""
import pytest

from triage.memory import estimate
from triage.memory.models import shape_from_config, shape_from_name

GIB = 2**30
LLAMA2_7B_DDP = (
    "torchrun --nproc_per_node 8 train.py --model_name_or_path meta-llama/Llama-2-7b-hf --bf16 True "
    "--per_device_train_batch_size 4 --model_max_length 2048 --gradient_checkpointing True "
    "--attn_implementation flash_attention_2"
)


def test_it_estimates_a_full_fine_tune_under_ddp_and_says_it_does_not_fit():
    result = estimate(LLAMA2_7B_DDP, {}, {"gpu_capacity_gib": 80})
    # Llama-2-7B: P = 6.74e9, L = 32, h = 4096, a = 32, V = 32000; bf16 + AdamW, DDP (no sharding)
    # weights    2 x 6.74e9                      = 13.48e9 B  = 12.55 GiB
    # gradients  2 x 6.74e9                      = 13.48e9 B  = 12.55 GiB
    # optimizer  (8 + 4 master) x 6.74e9         = 80.88e9 B  = 75.33 GiB
    # activations, checkpointing + flash attention, s = 2048, b = 4, sbh = 33.55e6; gated MLP i = 11012
    # (from P: ((P - 2Vh)/L - 4h^2) / 3h); --bf16 under DDP is autocast: the residual stream stays fp32
    #   layer inputs  L*4*s*b*h                        = 4.295e9 B = 4.00 GiB
    #   one layer     half: q,k,v 3 + out 2 + MLP 4i/h 10.754 + SDPA casts 3 = 18.754 x 2 B
    #                 fp32: norms 4 + RoPE q,k 2 = 6 x 4 B  -> 61.51 B x sbh = 2.064e9 B = 1.92 GiB
    #   logits        s*b*V*(2 + 4 + 4 + 4)            = 3.670e9 B = 3.42 GiB   -> 9.34 GiB
    # overhead   0.75 + 10% x 109.77             = 11.73 GiB
    # total                                        121.50 GiB > 80
    assert result["components_gib"] == {
        "weights": 12.55, "gradients": 12.55, "optimizer": 75.33, "activations": 9.34, "overhead": 11.73,
    }
    assert result["total_gib"] == pytest.approx(121.50, abs=0.02)
    assert result["fits"] is False and result["capacity_gib"] == 80
    assert result["params"] == 6_740_000_000 and result["sharding"] == "ddp"
    # FSDP FULL_SHARD over 8: 12.55/8 + 2 gathered layers (4 x 6.74e9/32 B = 0.78) + 12.55/8 + 75.33/8 + 7.03
    # (activations in pure bf16 under FSDP: see the ZeRO-3 test)
    shard = next(a for a in result["after_fixes"] if a["kind"] == "shard_more")
    assert shard["fits"] is True and shard["total_gib"] == pytest.approx(23.15, abs=0.02)
    batch = next(a for a in result["after_fixes"] if a["kind"] == "reduce_batch_size")
    assert batch["fits"] is False  # activations are not the problem here
    assert result["fits_after"] == "shard_more"
    assert any("Korthikanti" in f for f in result["formulas"])


def test_it_divides_everything_by_the_world_under_zero3():
    configs = {"ds_z3.json": {"zero_optimization": {"stage": 3}, "bf16": {"enabled": True}}}
    result = estimate(LLAMA2_7B_DDP + " --deepspeed ds_z3.json", configs, {"gpu_capacity_gib": 80})
    # weights  13.48e9/8 + 2 layers gathered in half (2 x 6.74e9/32 x 2 B = 0.8425e9) = 2.527e9 B = 2.35 GiB
    # grads    13.48e9/8 = 1.57 GiB; optimizer 80.88e9/8 = 9.42 GiB
    # activations in pure bf16 (DeepSpeed casts the model): layer inputs L*2*s*b*h = 2.00 GiB;
    #   one layer (norms 4 + RoPE 2 + q,k,v,out 5 + MLP 10.754) x 2 B + 2 fp32 RMSNorm upcasts x 4 B
    #   = 51.51 B x sbh = 1.61 GiB; logits 3.42 GiB -> 7.03 GiB
    # overhead 0.75 + 10% x 20.37 = 2.79 -> total 23.15 GiB
    assert result["sharding"] == "zero3 over 8 GPU(s)"
    assert result["components_gib"]["weights"] == pytest.approx(2.35, abs=0.01)
    assert result["components_gib"]["optimizer"] == pytest.approx(9.42, abs=0.01)
    assert result["components_gib"]["activations"] == pytest.approx(7.03, abs=0.01)
    assert result["total_gib"] == pytest.approx(23.15, abs=0.02)
    assert result["fits"] is True


def test_it_counts_only_adapters_as_trainable_under_qlora_and_counts_eager_attention():
    command = ("python train.py --model_name_or_path mistralai/Mistral-7B-v0.1 --load_in_4bit True --lora_r 16 "
               "--per_device_train_batch_size 2 --max_seq_length 1024 --bf16 True --attn_implementation eager")
    oom = {"capacity_mib": 24 * 1024}
    result = estimate(command, {}, {}, oom=oom)
    # Mistral-7B: P = 7.24e9, L = 32, h = 4096, a = 32, V = 32000
    # adapters  L x 4 modules x r x 2h = 32*4*16*2*4096          = 16,777,216 params
    # weights   0.55 x 7.24e9 (4-bit) + 4 x 16.78e6              = 4.049e9 B = 3.77 GiB
    # grads 4 x 16.78e6 = 0.06 GiB; AdamW 8 x 16.78e6 = 0.125 GiB
    # activations, eager attention, no checkpointing, s = 1024, b = 2, sbh = 8.39e6, i = 12284 (from P):
    #   per layer, pure bf16 (4-bit base, LoRA): norms 4 + RoPE 2 + q,k,v,out 5 + MLP 3i/h 8.997 (a frozen
    #   down_proj keeps no input) = 20.0 x 2 B + 2 fp32 upcasts x 4 B = 47.99 B x sbh = 402.6e6 B
    #   + eager scores a*s*s*b x 6 B (fp32 softmax output 4 + its bf16 cast 2) = 402.6e6 B
    #   -> 805.3e6 B; x 32 = 24.00 GiB; logits 1024*2*32000*14 = 0.85 GiB -> 24.85 GiB
    # overhead 0.75 + 10% x 28.80 = 3.63 -> total 32.44 GiB > 24
    assert result["finetuning"] == "qlora" and result["trainable_params"] == 16_777_216
    assert result["components_gib"]["weights"] == pytest.approx(3.77, abs=0.01)
    assert result["components_gib"]["activations"] == pytest.approx(24.85, abs=0.01)
    assert result["total_gib"] == pytest.approx(32.44, abs=0.02)
    assert result["fits"] is False and result["capacity_gib"] == 24
    # with checkpointing: 32*2*1024*2*4096 B (0.5 GiB) + one layer (0.75) + logits (0.85) = 2.10 GiB
    ckpt = next(a for a in result["after_fixes"] if a["kind"] == "enable_gradient_checkpointing")
    assert ckpt["components_gib"]["activations"] == pytest.approx(2.10, abs=0.01)
    assert ckpt["fits"] is True
    assert result["fits_after"] == "reduce_batch_size"  # b = 1 halves 24.85 -> 12.43: 18.77 GiB fits


def test_it_counts_parameters_from_a_config_json():
    config = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000}
    # per layer: attention 4 x 4096^2 = 67,108,864 + SwiGLU MLP 3 x 4096 x 11008 = 135,266,304
    # 32 layers = 6,476,005,376 + embeddings and head 2 x 32000 x 4096 = 262,144,000 -> 6,738,149,376
    assert shape_from_config(config).params == 6_738_149_376
    result = estimate("python train.py --bf16 --per_device_train_batch_size 1", {"config.json": config}, {})
    assert result["params"] == 6_738_149_376 and result["params_source"] == "config.json"
    assert result["fits"] is None  # no capacity known


def test_it_counts_grouped_query_attention_and_tied_embeddings():
    config = {"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
              "num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936, "tie_word_embeddings": True}
    # attention 2 x 896^2 + 2 x 896 x 128 = 1,835,008; MLP 3 x 896 x 4864 = 13,074,432
    # 24 x 14,909,440 = 357,826,560 + 151936 x 896 = 136,134,656 -> 493,961,216 (Qwen2.5-0.5B: 494M)
    assert shape_from_config(config).params == 493_961_216


@pytest.mark.parametrize("name, billions, layers", [
    ("meta-llama/Llama-2-7b-hf", 6.74, 32), ("meta-llama/Meta-Llama-3.1-70B-Instruct", 70.6, 80),
    ("/mnt/models/longchat-13b-16k", 13.0, 40), ("Qwen/Qwen2.5-0.5B-Instruct", 0.49, 24),
    ("mistralai/Mixtral-8x7B-v0.1", 46.7, 32), ("google/gemma-2b", 2.51, 18), ("google/gemma-2-9b", 9.24, 42),
    ("gpt2", 0.124, 12), ("gpt2-medium", 0.355, 24), ("facebook/opt-1.3b", 1.32, 24),
    ("ChatGLM-6B/", 6.24, 28), ("lmsys/vicuna-13b-v1.5", 13.0, 40), ("huggyllama/llama-30b", 32.5, 60),
    ("meta-llama/Llama-3.2-1B", 1.24, 16), ("/data/my-custom-model-34b", 34.0, 60),
])
def test_it_knows_model_sizes_from_names(name, billions, layers):
    shape = shape_from_name(name)
    assert shape.params == pytest.approx(billions * 1e9) and shape.layers == layers


def test_it_returns_none_without_a_model():
    assert estimate("python train.py --model_name_or_path ./model", {}, {}) is None
    assert estimate(None, {}, {}) is None
    assert estimate("torchrun \"unterminated", {"x": [1, 2]}, {}) is None


def test_it_reads_fsdp_offload_and_hybrid_shard():
    base = ("torchrun --nnodes 2 --nproc_per_node 8 train.py --model_name_or_path meta-llama/Llama-2-70b-hf "
            "--bf16 True --per_device_train_batch_size 1 --gradient_checkpointing True")
    hybrid = estimate(base + " --fsdp 'hybrid_shard auto_wrap'", {}, {})
    assert hybrid["sharding"] == "fsdp_hybrid_shard over 8 GPU(s)"  # shards within a node
    offload = estimate(base + " --fsdp 'full_shard offload auto_wrap'", {}, {})
    assert offload["sharding"] == "fsdp_full_shard+offload_optimizer+offload_params over 16 GPU(s)"
    assert offload["components_gib"]["optimizer"] == 0
    assert offload["total_gib"] < hybrid["total_gib"]


def test_it_counts_only_the_unfrozen_layers_under_freeze_tuning():
    command = ("deepspeed train.py --model_name_or_path ChatGLM-6B/ --per_device_train_batch_size 1 --max_len 1560 "
               "--train_type freeze --freeze_module_name \"layers.27.,layers.26.,layers.25.,layers.24.\"")
    result = estimate(command, {}, {})
    # ChatGLM-6B: P = 6.24e9, L = 28; 4 of 28 layers train: Pt = 6.24e9 x 4/28 = 891,428,571; fp32 (no flag)
    # weights 4 x 6.24e9 = 23.25 GiB; gradients 4 x Pt = 3.32 GiB; AdamW 8 x Pt = 6.64 GiB
    assert result["finetuning"] == "freeze" and result["trainable_params"] == 891_428_571
    assert result["precision"] == "fp32" and result["seq_len"] == 1560
    parts = result["components_gib"]
    assert (parts["weights"], parts["gradients"], parts["optimizer"]) == (23.25, 3.32, 6.64)


def test_it_reads_8bit_loading_and_torch_dtype():
    command = ("python train.py --model_name_or_path meta-llama/Llama-2-7b-hf --load_in_8bit True --lora_r 8 "
               "--torch_dtype float16 --per_device_train_batch_size 1 --max_seq_length 512")
    result = estimate(command, {}, {})
    # 8-bit base 1.1 x 6.74e9 = 7.414e9 B + 4 x (32 x 4 x 8 x 2 x 4096 = 8,388,608) adapter bytes = 6.94 GiB
    assert result["finetuning"] == "lora_8bit" and result["precision"] == "fp16"
    assert result["components_gib"]["weights"] == pytest.approx(6.94, abs=0.01)


def test_it_takes_the_micro_batch_from_deepspeed_and_not_its_global_batch():
    configs = {"ds.json": {"train_batch_size": 256, "train_micro_batch_size_per_gpu": 4}}
    result = estimate("deepspeed --num_gpus 8 t.py --model_name_or_path gpt2 --deepspeed ds.json", configs, {})
    assert result["batch"] == 4 and result["sharding"] == "ddp" and result["world_size"] == 8
    assert not any("DeepSpeed config not given" in note for note in result["assumptions"])


def test_it_calibrates_to_the_oom_that_happened_when_the_model_explains_less():
    command = ("torchrun --nproc_per_node=4 train.py --model_name_or_path lmsys/vicuna-7b-v1.5 --bf16 True "
               "--per_device_train_batch_size 2 --fsdp 'full_shard auto_wrap' --model_max_length 2048 "
               "--gradient_checkpointing True")
    oom = {"capacity_mib": 79.15 * 1024, "free_mib": 1.02 * 1024, "tried_mib": 2048.0}
    plain = estimate(command, {}, {"gpu_capacity_gib": 79.15})
    assert plain["fits"] is True and plain["calibration"] is None  # the model alone says it fits...
    result = estimate(command, {}, {}, oom=oom)
    # ...but the step needed 79.15 - 1.02 + 2.00 = 80.13 GiB, so every total is scaled by 80.13 / raw
    factor = result["calibration"]["factor"]
    assert result["calibration"]["observed_need_gib"] == 80.13
    assert factor == pytest.approx(80.13 / plain["total_gib"], rel=1e-3)
    assert result["total_gib"] == pytest.approx(80.13, abs=0.05) and result["fits"] is False
    assert result["model_total_gib"] == plain["total_gib"]
    batch = next(a for a in result["after_fixes"] if a["kind"] == "reduce_batch_size")
    assert batch["total_gib"] == pytest.approx(batch["model_total_gib"] * factor, abs=0.02)
    assert any("scaled by" in note for note in result["assumptions"])


def test_it_shows_a_range_and_names_the_input_when_the_attention_kernel_is_unknown():
    command = ("python train.py --model_name_or_path mistralai/Mistral-7B-v0.1 --load_in_4bit True --lora_r 16 "
               "--per_device_train_batch_size 2 --max_seq_length 1024 --bf16 True")
    result = estimate(command, {}, {}, oom={"capacity_mib": 24 * 1024})
    # SDPA (assumed) keeps no scores: 402.6e6 B x 32 = 12.00 GiB + logits 0.85 = 12.85 GiB;
    # eager adds the a*s*s scores: 24.85 GiB, the upper end (total 32.44 GiB, as above)
    assert result["attention"] == "unknown"
    assert result["components_gib"]["activations"] == pytest.approx(12.85, abs=0.01)
    assert [u["input"] for u in result["unknown_inputs"]] == ["attention kernel (SDPA/flash .. eager)"]
    low, high = result["range_gib"]
    assert high == pytest.approx(32.44, abs=0.02) and low == result["total_gib"] < 24 < high
    assert result["fits"] is None  # the range straddles the 24 GiB card: it cannot say


@pytest.mark.parametrize("frames, facts, evidence, kernel", [
    (["/x/site-packages/transformers/integrations/sdpa_attention.py"], {}, "", "sdpa"),
    (["/x/site-packages/flash_attn/flash_attn_interface.py"], {}, "", "flash"),
    (["/x/site-packages/transformers/models/llama/modeling_llama.py", "eager_attention_forward"], {}, "", "eager"),
    ([], {}, "transformers version: 4.33.2, torch 2.0.1", "eager"),
    ([], {"transformers_version": "4.46.1"}, "", "sdpa"),
])
def test_it_infers_the_attention_kernel_from_frames_and_versions_and_says_so(frames, facts, evidence, kernel):
    command = "python train.py --model_name_or_path meta-llama/Llama-2-7b-hf --bf16 True --max_seq_length 4096"
    result = estimate(command, {}, facts, frames=frames, evidence=evidence)
    assert result["attention"] == kernel and result["attention_reason"]
    assert any(a.startswith(f"attention: {kernel}") for a in result["assumptions"])
