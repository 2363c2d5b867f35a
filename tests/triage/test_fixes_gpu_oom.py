"""GPU out-of-memory: concrete, ranked fixes tied to the OOM numbers and the memory estimate."""
from pathlib import Path

from triage.fixes import FixContext, build_fixes

COMMANDS = Path(__file__).parent / "fixtures" / "commands"
MEMORY = Path(__file__).parent / "fixtures" / "memory"
OLD_OOM = (MEMORY / "oom_old.txt").read_text().strip()  # 40 GB A100, 0.24 GiB reserved-but-unallocated
NEW_OOM = (MEMORY / "oom_new.txt").read_text().strip()  # 80 GB, 6.1 GiB reserved-but-unallocated


def oom_fixes(kinds, command=None, message=OLD_OOM, **extra):
    return build_fixes(kinds, FixContext(category="gpu_oom", command=command, message=message, **extra))


def by_kind(fixes, kind):
    return next(f for f in fixes if f["kind"] == kind)


def test_it_keeps_the_rules_first_kind_and_rewrites_the_fastchat_recipe():
    command = (COMMANDS / "fastchat.sh").read_text()
    fixes = oom_fixes(["reduce_batch_size", "enable_gradient_checkpointing", "shard_more"], command, world_size=4)
    first = fixes[0]
    assert first["kind"] == "reduce_batch_size" and first["verified"] is None and first["env"] == {}
    assert first["command"] == command.replace("batch_size 2 \\", "batch_size 1 \\").replace(
        "accumulation_steps 16 \\", "accumulation_steps 32 \\")
    assert "global batch kept: 2 x 16 x 4 = 1 x 32 x 4 = 128" in first["notes"][0]
    assert "-    --per_device_train_batch_size 2 \\" in first["diff"]
    # checkpointing is already on in this recipe: it says so and ranks last
    assert fixes[-1]["kind"] == "enable_gradient_checkpointing" and fixes[-1]["applicable"] is False
    assert fixes[-1]["command"] == command
    shard = by_kind(fixes, "shard_more")
    assert '--fsdp "full_shard offload auto_wrap" \\' in shard["command"]
    assert shard["estimate"]["capacity_gib"] == 39.39  # from the OOM message


def test_it_adds_expandable_segments_only_when_the_cache_is_fragmented():
    command = "torchrun --nproc_per_node 2 train.py --per_device_train_batch_size 8"
    fragmented = oom_fixes(["reduce_batch_size"], command, message=NEW_OOM)
    extra = fragmented[-1]
    assert extra["kind"] == "fix_config"
    assert extra["env"] == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert extra["command"] == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True " + command
    assert "6.10 GiB was reserved by PyTorch but unallocated" in extra["notes"][0]
    tight = oom_fixes(["reduce_batch_size"], command, message=OLD_OOM)
    assert [f["kind"] for f in tight] == ["reduce_batch_size"]


def test_it_prefers_oom_numbers_from_the_memory_collector():
    oom = {"capacity_mib": 81000, "reserved_unallocated_mib": 4000, "tried_mib": 1000, "gpu": 0, "free_mib": 10}
    fixes = build_fixes(["enable_gradient_checkpointing"],
                        FixContext(category="gpu_oom", command="python t.py", memory={"series": [], "oom": oom}))
    assert fixes[-1]["env"] == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}


def test_it_turns_on_mixed_precision_in_the_launchers_own_way():
    plain = oom_fixes(["enable_mixed_precision"], "python train.py --per_device_train_batch_size 4")[0]
    assert plain["command"] == "python train.py --per_device_train_batch_size 4 --bf16 True"
    accelerate = oom_fixes(["enable_mixed_precision"], "accelerate launch --num_processes 2 train.py --lr 1")[0]
    assert accelerate["command"] == "accelerate launch --num_processes 2 --mixed_precision bf16 train.py --lr 1"
    already = oom_fixes(["enable_mixed_precision"], "python train.py --fp16")[0]
    assert already["applicable"] is False and already["changes"] == []


def test_it_cuts_the_sequence_length_with_the_scripts_own_flag():
    llamafactory = (COMMANDS / "deepspeed_include.sh").read_text()
    fix = oom_fixes(["reduce_seq_len"], llamafactory)[0]
    assert "--cutoff_len 1024 \\" in fix["command"] and fix["changes"][0]["old"] == "2048"
    chatglm = "python sft.py --max_source_length 512 --max_target_length 128 --fp16"
    fix = oom_fixes(["reduce_seq_len"], chatglm)[0]
    assert fix["command"] == "python sft.py --max_source_length 256 --max_target_length 64 --fp16"
    missing = oom_fixes(["reduce_seq_len"], "python train.py --stage sft --template qwen")[0]
    assert missing["command"].endswith("--cutoff_len 1024")


def test_it_strengthens_a_given_deepspeed_config_and_returns_the_corrected_json():
    command = "deepspeed train.py --deepspeed ds_z2.json --per_device_train_batch_size 4"
    z2 = {"zero_optimization": {"stage": 2, "overlap_comm": True}, "train_micro_batch_size_per_gpu": "auto"}
    fix = oom_fixes(["shard_more"], command, configs={"ds_z2.json": z2})[0]
    assert fix["config_patch"]["ds_z2.json"]["zero_optimization.stage"] == 3
    assert fix["config"]["ds_z2.json"]["zero_optimization"] == {
        "stage": 3, "overlap_comm": True, "stage3_gather_16bit_weights_on_model_save": True}
    assert z2["zero_optimization"]["stage"] == 2  # the input is not mutated
    z3 = {"zero_optimization": {"stage": 3}}
    fix = oom_fixes(["shard_more"], command, configs={"ds_z2.json": z3})[0]
    assert fix["config"]["ds_z2.json"]["zero_optimization"]["offload_optimizer"]["device"] == "cpu"


def test_it_adds_fsdp_on_several_gpus_and_zero3_offload_on_one():
    multi = oom_fixes(["shard_more"], "torchrun --nproc_per_node 4 train.py --per_device_train_batch_size 4")[0]
    assert multi["command"].endswith("--fsdp 'full_shard auto_wrap'")
    single = oom_fixes(["shard_more"], "python train.py --per_device_train_batch_size 4 --bf16 True")[0]
    assert single["command"].endswith("--deepspeed ds_zero3_offload.json")
    zero = single["config"]["ds_zero3_offload.json"]["zero_optimization"]
    assert zero["stage"] == 3 and zero["offload_param"]["device"] == "cpu"


def test_it_patches_the_training_yaml_when_the_setting_lives_there():
    configs = {"llama3_lora_sft.yaml": {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2}}
    command = (COMMANDS / "llamafactory_cli.txt").read_text()
    fix = oom_fixes(["reduce_batch_size"], command, configs=configs, world_size=2)[0]
    assert fix["config_patch"] == {"llama3_lora_sft.yaml": {"per_device_train_batch_size": 2,
                                                            "gradient_accumulation_steps": 4}}
    assert fix["config"]["llama3_lora_sft.yaml"] == {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4}
    assert fix["command"] == command  # nothing to change on the command line
    assert "4 x 2 x 2 = 2 x 4 x 2 = 16" in fix["notes"][0]


def test_it_names_the_flags_when_no_command_was_given():
    fixes = oom_fixes(["reduce_batch_size", "enable_gradient_checkpointing", "reduce_seq_len"])
    assert all(f["command"] is None and f["diff"] is None for f in fixes)
    assert [c["flag"] for c in fixes[0]["changes"]] == ["--per_device_train_batch_size", "--gradient_accumulation_steps"]
    assert [(c["old"], c["new"]) for c in fixes[0]["changes"]] == [(None, "4"), (None, "2")]
    assert fixes[1]["changes"][0]["flag"] == "--gradient_checkpointing"


def test_it_cuts_the_batch_to_what_the_estimate_says_fits_and_appends_a_fix_that_fits():
    command = ("torchrun --nproc_per_node 8 train.py --model_name_or_path meta-llama/Llama-2-7b-hf --bf16 True "
               "--per_device_train_batch_size 16 --model_max_length 2048 --gradient_checkpointing True "
               "--attn_implementation flash_attention_2 --deepspeed ds.json")
    configs = {"ds.json": {"zero_optimization": {"stage": 3}}}
    fixes = oom_fixes(["reduce_batch_size"], command, message=None, configs=configs, facts={"gpu_capacity_gib": 24})
    first = fixes[0]
    # ZeRO-3 over 8: ~13.9 GiB of states; activations ~1.13 GiB per sample -> batch 4 fits 24 GiB, 8 does not
    assert "--per_device_train_batch_size 4" in first["command"]
    assert "--gradient_accumulation_steps 4" in first["command"]
    assert first["estimate"]["before_gib"] > 24


def test_it_never_raises_on_odd_input():
    odd = FixContext(category="gpu_oom", command='torchrun "unterminated --per_device_train_batch_size x',
                     configs={"a.json": ["not", "a", "dict"], "b": None}, evidence=[None, 3],
                     memory={"oom": {"capacity_mib": "lots"}}, facts=None, data_sample=object())
    fixes = build_fixes(["reduce_batch_size", "shard_more", None, "no_such_kind", "reduce_seq_len"], odd)
    assert [f["kind"] for f in fixes[:4]] == ["reduce_batch_size", "shard_more", "no_such_kind", "reduce_seq_len"] or \
        {f["kind"] for f in fixes} >= {"reduce_batch_size", "shard_more", "no_such_kind", "reduce_seq_len"}
    assert all({"kind", "title", "why", "command", "env", "verified"} <= set(f) for f in fixes)
    unknown = next(f for f in fixes if f["kind"] == "no_such_kind")
    assert "no builder" in unknown["title"]


def test_it_takes_the_gpu_size_from_the_memory_series_when_the_oom_message_lacks_it():
    command = ("torchrun --nproc_per_node 8 train.py --model_name_or_path meta-llama/Llama-2-7b-hf --bf16 True "
               "--per_device_train_batch_size 4 --model_max_length 2048 --gradient_checkpointing True "
               "--attn_implementation flash_attention_2")
    series = [{"kind": "gpu_used", "gpu": 0, "capacity": 40960.0, "points": [[0, 40000.0]]}]
    fixes = build_fixes(["shard_more"], FixContext(category="gpu_oom", command=command,
                                                   memory={"series": series, "oom": None}))
    assert fixes[0]["estimate"]["capacity_gib"] == 40.0 and fixes[0]["estimate"]["fits"] is True


def test_it_estimates_the_batch_it_actually_chose():
    command = ("torchrun --nproc_per_node 8 train.py --model_name_or_path meta-llama/Llama-2-7b-hf --bf16 True "
               "--per_device_train_batch_size 16 --model_max_length 2048 --gradient_checkpointing True "
               "--attn_implementation flash_attention_2 --deepspeed ds.json")
    configs = {"ds.json": {"zero_optimization": {"stage": 3}}}
    (first, *_) = oom_fixes(["reduce_batch_size"], command, message=None, configs=configs,
                         facts={"gpu_capacity_gib": 24})
    # batch 4: 13.34 GiB of sharded states + 7.03 GiB activations + overhead = 23.15 GiB <= 24
    assert first["estimate"] == {"total_gib": 23.15, "fits": True, "before_gib": first["estimate"]["before_gib"],
                                 "capacity_gib": 24.0}
    assert first["estimate"]["before_gib"] > 24


def test_it_adds_the_flag_instead_of_touching_auto_values_in_the_deepspeed_json():
    configs = {"ds.json": {"gradient_accumulation_steps": "auto", "train_micro_batch_size_per_gpu": "auto",
                           "zero_optimization": {"stage": 2}}}
    command = "deepspeed --num_gpus 2 train.py --deepspeed ds.json --per_device_train_batch_size 8"
    (fix, *_) = oom_fixes(["reduce_batch_size"], command, message=None, configs=configs)
    assert fix["command"] == command.replace("size 8", "size 4") + " --gradient_accumulation_steps 2"
    assert "config_patch" not in fix  # "auto" keeps following the flags


def test_it_takes_the_world_size_from_the_accelerate_config():
    configs = {"fsdp.yaml": {"distributed_type": "FSDP", "num_processes": 4,
                             "fsdp_config": {"fsdp_sharding_strategy": "SHARD_GRAD_OP"}}}
    command = "accelerate launch --config_file fsdp.yaml train.py --per_device_train_batch_size 8"
    fixes = oom_fixes(["reduce_batch_size", "shard_more"], command, message=None, configs=configs)
    assert "8 x 1 x 4 = 4 x 2 x 4 = 32" in fixes[0]["notes"][0]
    assert fixes[1]["config"]["fsdp.yaml"]["fsdp_config"] == {"fsdp_sharding_strategy": "FULL_SHARD"}


def test_ranks_sharing_the_gpu_that_ran_out_put_device_placement_first(tmp_path):
    from triage import diagnose

    message = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity "
               "of 79.15 GiB of which 120.00 MiB is free. Process 5101 has 24.10 GiB memory in use. Process 5102 has "
               "23.80 GiB memory in use. Process 5103 has 12.00 GiB memory in use. Including non-PyTorch memory, "
               "this process has 19.00 GiB memory in use.")
    log = tmp_path / "shared.log"
    log.write_text("[rank3]: Traceback (most recent call last):\n"
                   '[rank3]:   File "/srv/q/finetune.py", line 90, in <module>\n'
                   "[rank3]:     trainer.train()\n"
                   f"[rank3]: {message}\n")
    result = diagnose([log], command="torchrun --nproc-per-node 4 finetune.py")
    first = result.fixes[0]
    assert (result.category, first["kind"]) == ("gpu_oom", "fix_code")
    assert first["title"] == "Put each rank on its own GPU"
    assert any("LOCAL_RANK" in note for note in first["notes"])
    # one other process (a stray server, a co-located engine) is not the ranks sharing the GPU
    single = tmp_path / "stray.log"
    single.write_text(log.read_text().replace("Process 5102 has 23.80 GiB memory in use. Process 5103 has 12.00 GiB "
                                              "memory in use. ", ""))
    assert diagnose([single], command="torchrun --nproc-per-node 4 finetune.py").fixes[0]["kind"] != "fix_code"


def test_a_batch_of_one_is_read_from_the_launchers_argv_line_when_no_command_is_given(tmp_path):
    from triage import diagnose

    argv = ", ".join(f"'{part}'" for part in [
        "/usr/bin/python", "-u", "train.py", "--local_rank=1", "--deepspeed", "z3.json", "--model_name_or_path",
        "/models/big-13b", "--dataset", "support_chat", "--cutoff_len", "2048", "--learning_rate", "5e-05",
        "--num_train_epochs", "3.0", "--lora_rank", "8", "--output_dir", "out/lora", "--logging_steps", "10",
        "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "8"])
    log = tmp_path / "ds.log"
    log.write_text(
        "Traceback (most recent call last):\n  File \"/srv/ft/train.py\", line 30, in <module>\n    trainer.train()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.20 GiB (GPU 1; 23.69 GiB total capacity)\n"
        f"[2026-01-01 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] [{argv}] exits with return code = 1\n")
    kinds = [fix["kind"] for fix in diagnose([log]).fixes]
    assert "reduce_batch_size" not in kinds[:3]  # already one: ruled out, last of the memory fixes


def test_an_oom_while_the_optimizer_builds_its_states_asks_to_shard_first(tmp_path):
    # AdamW's first step allocating exp_avg / exp_avg_sq: no activation is in play, so the batch cannot help
    from tests.triage.triage_helpers import diagnose_text

    site = "/opt/venv/lib/python3.11/site-packages/torch/optim"
    text = ("[rank2]: Traceback (most recent call last):\n"
            '[rank2]:   File "/home/ml/mt/train_multitask.py", line 210, in train_step\n'
            "[rank2]:     optimizer.step()\n"
            f'[rank2]:   File "{site}/adamw.py", line 209, in step\n'
            "[rank2]:     has_complex = self._init_group(\n"
            f'[rank2]:   File "{site}/adamw.py", line 152, in _init_group\n'
            '[rank2]:     state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)\n'
            "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 2 has a total "
            "capacity of 79.15 GiB of which 1.02 GiB is free. Of the allocated memory 75.80 GiB is allocated by "
            "PyTorch, and 1.10 GiB is reserved by PyTorch but unallocated.\n")
    result = diagnose_text(tmp_path, text, command="torchrun --nproc_per_node 8 train_multitask.py --batch_size 4")
    assert result.category == "gpu_oom"
    first = result.fixes[0]
    assert first["kind"] == "shard_more"
    assert not first.get("ruled_out")  # sharding the team's own loop is a change to make, not one already made
