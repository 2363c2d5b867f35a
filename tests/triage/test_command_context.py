"""What the launch command shows changes what a log means: a parse error in the config file it passes."""

from __future__ import annotations

import pytest

from triage import diagnose
from triage.commandline import parse_command
from triage.commandline.files import named_files

PARSE_ERROR = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/ops/sweep/run_pretrain.py", line 51, in setup
[rank1]:     overrides = json.load(handle)
[rank1]:   File "/usr/lib/python3.11/json/__init__.py", line 293, in load
[rank1]:     return loads(fp.read(),
[rank1]:   File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode
[rank1]:     raise JSONDecodeError("Expecting value", s, err.value) from None
[rank1]: json.decoder.JSONDecodeError: Expecting ',' delimiter: line 7 column 3 (char 131)
"""

THROUGH_DATASETS = PARSE_ERROR.replace("/home/ops/sweep/run_pretrain.py", "/opt/venv/lib/python3.11/site-packages/"
                                       "datasets/packaged_modules/json/json.py").replace("setup", "_generate_tables")


def _diagnose(tmp_path, text, command):
    log = tmp_path / "log.txt"
    log.write_text(text)
    return diagnose([log], command=command)


@pytest.mark.parametrize("flag", ["--config sweep/overrides.json", "--deepspeed ds_zero2.json",
                                  "--cfg-file=conf/run.json"])
def test_a_parse_error_with_only_a_config_file_passed_is_the_configs(tmp_path, flag):
    result = _diagnose(tmp_path, PARSE_ERROR, f"torchrun --nproc_per_node 2 run_pretrain.py {flag} --steps 9")
    assert result.category == "config_invalid"
    assert result.fixes[0]["kind"] == "fix_config"
    assert flag.split()[-1].split("=")[-1] in result.summary and result.failing_rank == 1


@pytest.mark.parametrize("command", [
    None,
    "torchrun --nproc_per_node 2 run_pretrain.py --steps 9",
    "torchrun --nproc_per_node 2 run_pretrain.py --config sweep/overrides.json --train_file data/part1.jsonl",
])
def test_a_parse_error_is_the_datas_when_the_command_names_data_or_no_config(tmp_path, command):
    assert _diagnose(tmp_path, PARSE_ERROR, command).category == "data_corrupt"


def test_a_json_error_with_only_a_yaml_config_passed_is_not_the_configs(tmp_path):
    # YAML parsers raise their own errors: the JSON that failed is a file the script reads, not the yaml
    result = _diagnose(tmp_path, PARSE_ERROR, "torchrun --nproc_per_node 2 run_pretrain.py --config conf/run.yaml")
    assert result.category == "data_corrupt"


def test_a_parse_error_inside_dataset_loading_stays_the_datas(tmp_path):
    command = "torchrun --nproc_per_node 2 run_pretrain.py --config sweep/overrides.json"
    assert _diagnose(tmp_path, THROUGH_DATASETS, command).category == "data_corrupt"


def test_named_files_splits_configs_from_data():
    cmd = parse_command("accelerate launch train.py --deepspeed ds.json --dataset_path d/rows.jsonl "
                        "--output_dir out --hparams hp.yaml notes.txt")
    assert named_files(cmd) == (["ds.json", "hp.yaml"], ["d/rows.jsonl", "notes.txt"])


def test_one_line_per_node_with_their_own_process_counts():
    from triage.commandline import node_layout, parse_script
    script = parse_script("torchrun --nnodes 2 --node_rank 0 --nproc_per_node 2 --master_addr h0 fit.py\n"
                          "torchrun --nnodes 2 --node_rank 1 --nproc_per_node 1 --master_addr h0 fit.py\n")
    assert node_layout(script) == {0: (0, 2), 1: (2, 1)}
    assert node_layout(parse_script("torchrun --nproc_per_node 4 fit.py")) is None


def test_a_second_nodes_log_gets_global_ranks_from_the_per_node_counts(tmp_path):
    # torchrun --log-dir on node 1: node1/<run>/attempt_0/<local rank>/stderr.log
    stderr = tmp_path / "node1" / "none_k2x" / "attempt_0" / "0" / "stderr.log"
    stderr.parent.mkdir(parents=True)
    stderr.write_text(
        "Traceback (most recent call last):\n"
        '  File "/job/fit.py", line 20, in main\n'
        "    load()\n"
        "KeyError: 'messages'\n")
    command = ("torchrun --nnodes 2 --node_rank 0 --nproc_per_node 3 fit.py\n"
               "torchrun --nnodes 2 --node_rank 1 --nproc_per_node 1 fit.py\n")
    result = diagnose([tmp_path / "node1"], command=command)
    assert (result.failing_rank, result.world_size) == (3, 4)


@pytest.mark.parametrize("command, offset", [
    ("torchrun --nnodes 2 --node_rank 1 --nproc_per_node 8 train.py", 8),
    ("accelerate launch --num_machines 2 --machine_rank 1 --num_processes 16 train.py", 8),
    ("torchrun --nnodes 3 --node_rank=2 --nproc_per_node=4 train.py", 8),
    ("torchrun --nnodes 2 --node_rank 0 --nproc_per_node 8 train.py", 0),
    ("torchrun --nnodes 2 --node_rank $NODE_RANK --nproc_per_node 8 train.py", 0),
    ("torchrun --nnodes 2 --node_rank 1 train.py", 0),  # no per-node count typed: not guessed
    ("accelerate launch --num_machines 2 --machine_rank 1 train.py", 0),  # count in a config we lack
])
def test_one_nodes_launch_line_says_where_its_local_ranks_start(command, offset):
    from triage.commandline import node_offset, parse_command
    assert node_offset(parse_command(command)) == offset


def test_the_second_nodes_agent_reporting_a_local_rank_names_the_global_one(tmp_path):
    # node 1's console, cut before the summary box: the agent only says "local_rank: 2"
    log = ("[2024-03-02 10:00:01,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
           "(exitcode: 1) local_rank: 2 (pid: 4120) of binary: /usr/bin/python\n")
    body = "Traceback (most recent call last):\n  File \"/job/fit.py\", line 9, in <module>\n    step()\n" \
           "FloatingPointError: loss is nan\n"
    command = "torchrun --nnodes 2 --node_rank 1 --nproc_per_node 4 fit.py"
    assert _diagnose(tmp_path, body + log, command).failing_rank == 6
    assert _diagnose(tmp_path, body + log, command.replace("--node_rank 1", "--node_rank 0")).failing_rank == 2


ZERO_DIVISION = """\
Traceback (most recent call last):
  File "/job/fit.py", line 88, in train
    if step % args.save_every == 0:
ZeroDivisionError: integer modulo by zero
"""


@pytest.mark.parametrize("command, category", [
    ("torchrun --nproc_per_node 2 fit.py --save_every 0 --steps 9", "config_invalid"),
    ("torchrun --nproc_per_node 2 fit.py --save_every 50 --steps 9", "code_bug"),
])
def test_a_division_by_a_setting_given_as_zero_is_the_settings(tmp_path, command, category):
    result = _diagnose(tmp_path, ZERO_DIVISION, command)
    assert result.category == category
    if category == "config_invalid":
        assert "--save_every" in result.summary and result.fixes[0]["kind"] == "fix_config"


def test_an_os_refusing_a_file_is_not_a_config_keyword(tmp_path):
    text = ('Traceback (most recent call last):\n  File "/job/fit.py", line 40, in resume\n    state = load(path)\n'
            "OSError: [Errno 22] Invalid argument\n")
    assert _diagnose(tmp_path, text, None).category == "storage"


def test_no_graph_to_backward_in_a_job_that_checkpoints_gradients_is_the_checkpointing_setting(tmp_path):
    from triage_helpers import diagnose_text

    text = ("[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/venv/lib/python3.10/site-packages/torch/autograd/__init__.py", line 251, in backward\n'
            "[rank1]:     Variable._execution_engine.run_backward(\n"
            "[rank1]: RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn\n")
    checkpointed = diagnose_text(tmp_path, text, command="torchrun --nproc_per_node 2 train_lora.py "
                                                         "--gradient_checkpointing --bf16")
    assert (checkpointed.category, checkpointed.fixes[0]["kind"]) == ("config_invalid", "fix_config")
    plain = diagnose_text(tmp_path, text, command="torchrun --nproc_per_node 2 train_lora.py --bf16", name="p.log")
    assert plain.category == "code_bug"


MISSING_PART = """\
[rank{rank}]: Traceback (most recent call last):
[rank{rank}]:   File "/srv/jobs/intent/train_intent.py", line 33, in <module>
[rank{rank}]:     rows = read_rows(os.path.join(args.parts, f"{{name}}"))
[rank{rank}]: FileNotFoundError: [Errno 2] No such file or directory: 'parts/{name}'
"""


@pytest.mark.parametrize(("rank", "name", "category"), [
    (5, "chunk_05.parquet", "config_invalid"),  # the last of 6 ranks: data cut for fewer processes
    (2, "chunk_02.parquet", "storage"),         # a middle rank: that part went missing
    (5, "optim_05.pt", "storage"),              # a checkpoint shard left uncopied, not data parts
])
def test_a_numbered_part_missing_only_on_the_last_rank_is_the_process_count(tmp_path, rank, name, category):
    command = "torchrun --nproc_per_node 6 train_intent.py --parts parts"
    result = _diagnose(tmp_path, MISSING_PART.format(rank=rank, name=name), command)
    assert result.failing_rank == rank
    assert result.category == category
    if category == "config_invalid":
        assert result.fixes[0]["kind"] == "fix_config" and "fewer processes" in result.summary


def test_a_parse_error_of_one_line_of_a_jsonl_file_is_the_datas_even_with_a_json_config(tmp_path):
    text = PARSE_ERROR.replace("overrides = json.load(handle)", "self.rows.append(json.loads(line))")
    result = _diagnose(tmp_path, text, "torchrun --nproc_per_node 2 run_pretrain.py --config train.json")
    assert (result.category, result.failing_rank) == ("data_corrupt", 1)
