"""Rewrites change only the flags they touch and keep the command's own style."""
from pathlib import Path

from triage.commandline import Rewrite, parse_command

FIXTURES = Path(__file__).parent / "fixtures" / "commands"


def rewrite(text, *edits):
    rw = Rewrite(parse_command(text))
    for method, *args in edits:
        where = {"where": args.pop()} if len(args) == 3 else {}
        getattr(rw, method)(*args, **where)
    return rw


def test_it_changes_only_the_value_token_and_keeps_continuations():
    text = (FIXTURES / "fastchat.sh").read_text()
    rw = rewrite(text, ("set_flag", ("per_device_train_batch_size",), 1))
    new = rw.render()
    assert new == text.replace("--per_device_train_batch_size 2 \\", "--per_device_train_batch_size 1 \\")
    assert rw.changes == [{"where": "script", "flag": "--per_device_train_batch_size", "old": "2", "new": "1"}]
    assert "-    --per_device_train_batch_size 2 \\" in rw.diff()
    assert "+    --per_device_train_batch_size 1 \\" in rw.diff()


def test_it_keeps_the_equals_form_and_the_quote_style():
    text = (FIXTURES / "torchrun_multinode.sh").read_text()
    new = rewrite(text, ("set_flag", "per_device_train_batch_size", 2),
                  ("set_flag", ("rdzv_endpoint",), "10.0.0.1:29401", "launcher")).render()
    assert "--per_device_train_batch_size=2 \\" in new
    assert '--rdzv_endpoint="10.0.0.1:29401" \\' in new  # still double-quoted
    assert new.replace("batch_size=2 \\", "batch_size=4 \\").replace("29401", "29400") == text


def test_it_appends_a_missing_flag_in_the_commands_continuation_style():
    text = (FIXTURES / "deepspeed_include.sh").read_text()
    new = rewrite(text, ("set_flag", ("gradient_checkpointing",), True)).render()
    # LLaMA-Factory style in this command: lower-case booleans, one flag a line
    assert new == text.rstrip("\n") + " \\\n    --gradient_checkpointing true\n"


def test_it_uses_kebab_case_and_equals_when_the_command_does():
    text = (FIXTURES / "accelerate_kebab.txt").read_text()
    new = rewrite(text, ("set_flag", ("gradient_checkpointing",), True)).render()
    assert new.endswith("--model-name-or-path='mistralai/Mistral-7B-v0.1' --gradient-checkpointing=True\n")


def test_it_adds_a_bare_switch_when_the_command_uses_bare_switches():
    text = "python train.py --bf16 --do_train --lr 1e-4"
    assert rewrite(text, ("set_flag", ("gradient_checkpointing",), True)).render() == text + " --gradient_checkpointing"


def test_it_sets_env_in_front_or_in_place():
    text = (FIXTURES / "env_prefix.txt").read_text()
    new = rewrite(text, ("set_env", "NCCL_DEBUG", "WARN"), ("set_env", "NCCL_P2P_DISABLE", "1")).render()
    assert new.startswith("NCCL_P2P_DISABLE=1 env CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=WARN python3 -u train.py")


def test_it_adds_a_launcher_flag_before_the_script():
    text = "torchrun --nproc_per_node 2 train.py --max_steps 5"
    new = rewrite(text, ("set_flag", ("master_port",), 29501, "launcher")).render()
    assert new == "torchrun --nproc_per_node 2 --master_port 29501 train.py --max_steps 5"


def test_it_renames_and_removes_flags():
    text = 'torchrun train.py --evaluation_strategy "no" --hostfile x --fp16'
    new = rewrite(text, ("rename_flag", "evaluation_strategy", "--eval_strategy"), ("remove_flag", "fp16")).render()
    assert new == 'torchrun train.py --eval_strategy "no" --hostfile x'


def test_it_quotes_new_values_that_need_it():
    text = "python train.py --fsdp 'full_shard auto_wrap'"
    assert rewrite(text, ("set_flag", "fsdp", "full_shard offload auto_wrap")).render() == \
        "python train.py --fsdp 'full_shard offload auto_wrap'"
    assert rewrite("python train.py", ("set_flag", "run_name", "a b")).render() == "python train.py --run_name 'a b'"


def test_it_inserts_before_redirections_and_pipes():
    text = "python a.py --x 2 2>&1 | tee log.txt"
    assert rewrite(text, ("set_flag", "y", 3)).render() == "python a.py --x 2 --y 3 2>&1 | tee log.txt"


def test_it_reports_changes_without_a_command():
    rw = rewrite("", ("set_flag", ("per_device_train_batch_size",), 2), ("set_env", "NCCL_DEBUG", "INFO"))
    assert rw.render() == ""
    assert [c.get("flag") or c.get("env") for c in rw.changes] == ["--per_device_train_batch_size", "NCCL_DEBUG"]


def test_it_keeps_crlf_line_endings():
    text = (FIXTURES / "crlf_tabs.txt").read_bytes().decode()
    new = rewrite(text, ("set_flag", "gradient_accumulation_steps", 4)).render()
    assert new == text.replace("--gradient_accumulation_steps 1", "--gradient_accumulation_steps 4")


def test_it_adds_key_value_overrides_to_key_value_commands():
    text = "llamafactory-cli train examples/llama3_lora_sft.yaml"
    assert rewrite(text, ("set_flag", "per_device_train_batch_size", 2)).render() == \
        text + " per_device_train_batch_size=2"
    mmf = "mmf_run config=c.yaml model=butd"
    assert rewrite(mmf, ("set_flag", "training.num_workers", 0)).render() == mmf + " training.num_workers=0"
