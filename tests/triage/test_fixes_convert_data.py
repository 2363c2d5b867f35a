"""The data converter behind `python -m triage convert-data`."""
import json

import pytest

from triage.fixes import convert_data
from triage.fixes.convert_data import convert_record, detect_format, main

ALPACA = {"instruction": "Name three primes.", "input": "", "output": "2, 3 and 5.", "system": "Be brief.",
          "history": [["Hi", "Hello!"]]}
SHAREGPT = {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello!"},
                              {"from": "human", "value": "Name three primes."}, {"from": "gpt", "value": "2, 3 and 5."}]}


def test_it_detects_each_format():
    assert detect_format(ALPACA) == "alpaca"
    assert detect_format(SHAREGPT) == "sharegpt"
    assert detect_format({"messages": []}) == "messages"
    assert detect_format({"prompt": "a", "completion": "b"}) == "alpaca"
    assert detect_format({"text": "x"}) == "text"
    assert detect_format({"foo": 1}) is None and detect_format(["x"]) is None


def test_it_converts_alpaca_with_history_and_system_to_sharegpt_and_messages():
    assert convert_record(ALPACA, "sharegpt") == {"conversations": [
        {"from": "system", "value": "Be brief."}, *SHAREGPT["conversations"]]}
    messages = convert_record(ALPACA, "messages")["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]


def test_it_converts_sharegpt_back_to_alpaca_keeping_history():
    assert convert_record(SHAREGPT, "alpaca") == {"instruction": "Name three primes.", "input": "",
                                                  "output": "2, 3 and 5.", "history": [["Hi", "Hello!"]]}


def test_it_joins_instruction_and_input():
    row = {"instruction": "Translate.", "input": "Good morning", "output": "Bonjour"}
    assert convert_record(row, "sharegpt")["conversations"][0]["value"] == "Translate.\n\nGood morning"


def test_it_runs_from_the_command_line_on_json_and_writes_jsonl(tmp_path, capsys):
    source, target = tmp_path / "alpaca.json", tmp_path / "out.jsonl"
    source.write_text(json.dumps([ALPACA, {"unknown": 1}]))
    assert main(["--to", "sharegpt", str(source), str(target)]) == 0
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert rows == [convert_record(ALPACA, "sharegpt")]
    assert "skipped 1" in capsys.readouterr().err


def test_it_repairs_a_jsonl_file_with_broken_rows(tmp_path):
    source, target = tmp_path / "bad.jsonl", tmp_path / "good.json"
    source.write_text('{"text": "a"}\n{"text": "b\n\n{"text": "c"}\n')
    assert main(["--repair", str(source), str(target)]) == 0
    assert json.loads(target.read_text()) == [{"text": "a"}, {"text": "c"}]


def test_it_reports_unreadable_input_with_status_2(tmp_path):
    assert main(["--to", "messages", str(tmp_path / "missing.json"), str(tmp_path / "o.json")]) == 2


def test_it_offers_a_subcommand_hook_for_the_engine_cli():
    import argparse

    parser = argparse.ArgumentParser(prog="triage")
    convert_data.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["convert-data", "--to", "sharegpt", "in.json", "out.json"])
    assert args.handler is convert_data.run and args.to == "sharegpt"
    with pytest.raises(SystemExit):
        parser.parse_args(["convert-data", "--to", "csv", "in.json", "out.json"])
