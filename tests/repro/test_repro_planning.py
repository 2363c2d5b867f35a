"""Pure host-side parts: command rewriting, layout detection, expectations (no sandbox)."""
import json

import pytest

from repro import datacheck, launchcmd

SEED = ("torchrun --nproc_per_node=8 --tee 3 fastchat/train/train.py --model_name_or_path mistralai/Mistral-7B-v0.1 "
        "--data_path /data/chat.json --bf16 True --output_dir out --model_max_length 4096 --deepspeed ds.json "
        "--report_to wandb --per_device_train_batch_size 8")


def test_the_command_gets_a_tiny_model_the_sample_two_processes_and_short_lengths():
    plan = launchcmd.plan(SEED, data_name="sample.json", master_port=31000)
    text = plan.text
    assert plan.family == "mistral" and plan.nproc == 2
    assert "--model_name_or_path /work/tiny-model" in text and "--data_path /work/in/sample.json" in text
    assert "--model_max_length 128" in text and "--output_dir /work/tmp/out" in text
    assert "--deepspeed" not in text and "wandb" not in text
    assert "--bf16 True" in text and "--per_device_train_batch_size 8" in text  # kept as written
    assert "torch.distributed.run --nproc_per_node 2" in text and "reference_train.py" in text
    assert "8 processes -> 2 (gloo on CPU)" in plan.changes


def test_an_uploaded_script_runs_with_its_own_flags_only():
    plan = launchcmd.plan("python train.py --data_path a.jsonl --lr 3e-4 --epochs=2", data_name="s.jsonl",
                          script_name="train.py")
    assert plan.argv[-6:] == ["/work/in/train.py", "--data_path", "/work/in/s.jsonl", "--lr", "3e-4", "--epochs=2"]
    assert plan.nproc == 1 and "torch.distributed.run" not in plan.text
    assert "--use_cpu" not in plan.text  # nothing appended that the user's parser would refuse


def test_the_deepspeed_launcher_is_not_launchable():
    with pytest.raises(launchcmd.NotLaunchable, match="DeepSpeed"):
        launchcmd.plan("deepspeed --num_gpus 8 train.py --deepspeed ds.json", data_name=None)


@pytest.mark.parametrize(("model", "family"), [
    ("meta-llama/Llama-3.1-8B", "llama"), ("Qwen/Qwen2.5-7B", "qwen2"), ("Qwen/Qwen3-4B", "qwen3"),
    ("google/gemma-2-9b", "gemma2"), ("microsoft/Phi-3-mini-4k", "phi3"), ("EleutherAI/pythia-1b", "gpt_neox"),
    ("lmsys/vicuna-7b", "llama"), ("gpt2", "gpt2")])
def test_the_family_comes_from_the_model_name(model, family):
    assert launchcmd.family_of(model) == family


@pytest.mark.parametrize(("row", "style"), [
    ({"instruction": "a", "input": "", "output": "b"}, "alpaca"),
    ({"conversations": [{"from": "human", "value": "x"}]}, "sharegpt"),
    ({"messages": [{"role": "user", "content": "x"}]}, "messages"),
    ({"text": "x"}, "text"), ({"prompt": "p", "completion": "c"}, "prompt_completion"), ({"foo": 1}, None)])
def test_row_styles(row, style):
    assert datacheck.row_style(row) == style


def test_describe_counts_styles_in_json_lines_and_recognises_dataset_info(tmp_path):
    lines = tmp_path / "d.jsonl"
    lines.write_text('{"text": "a"}\n{"instruction": "i", "output": "o"}\n{"text": "b"}\n')
    assert datacheck.describe(lines) == {"rows": 3, "styles": {"text": 2, "alpaca": 1}}
    info = tmp_path / "dataset_info.json"
    info.write_text(json.dumps({"alpaca_zh": {"file_name": "alpaca_zh.json"},
                                "chats": {"file_name": "c.json", "formatting": "sharegpt"}}))
    described = datacheck.describe(info)
    assert described["dataset_info"]["alpaca_zh"]["formatting"] == "alpaca"
    assert described["dataset_info"]["chats"]["formatting"] == "sharegpt"
    broken = tmp_path / "bad.json"
    broken.write_bytes(b"\xff\xfe not json")
    assert "error" in datacheck.describe(broken)


def test_the_expected_style_comes_from_the_diagnosis_then_the_flags():
    assert datacheck.expected_style({"facts": {"missing_key": "messages"}}) == ("messages", "the script reads the field 'messages'")
    keyerror = {"root_cause": {"exception": "KeyError", "message": "'instruction'"}}
    assert datacheck.expected_style(keyerror)[0] == "alpaca"
    assert datacheck.expected_style({}, "python sft.py --dataset_text_field text")[0] == "text"
    assert datacheck.expected_style({}, "python train.py --data_path x.json") == (None, "unknown")


def test_convert_uses_the_shipped_converter(tmp_path):
    source = tmp_path / "a.json"
    source.write_text(json.dumps([{"instruction": "q", "input": "", "output": "a"}, {"junk": 1}]))
    target, written, skipped = datacheck.convert(source, "messages", tmp_path)
    assert (written, skipped) == (1, 1)
    assert json.loads(target.read_text()) == [{"messages": [{"role": "user", "content": "q"},
                                                            {"role": "assistant", "content": "a"}]}]
