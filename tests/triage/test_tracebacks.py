"""Python tracebacks in every shape logs give them."""

from __future__ import annotations

from triage_helpers import write

from triage import diagnose
from triage.tracebacks import TracebackAssembler


def assemble(text: str):
    found = []
    assembler = TracebackAssembler("t.log", None, found)
    for number, line in enumerate(text.splitlines(), 1):
        assembler.feed(number, line, number, None)
    return found


def test_it_reads_a_standard_traceback():
    found = assemble(
        'Traceback (most recent call last):\n  File "/a/b.py", line 3, in main\n    x()\n'
        "ValueError: bad value\n"
    )
    assert [(tb.exception, tb.message) for tb in found] == [("ValueError", "bad value")]
    assert found[0].frames[0]["function"] == "main"


def test_it_reads_a_flattened_traceback_without_indentation():
    found = assemble(
        'Traceback (most recent call last):\nFile "/a/train.py", line 268, in\ntrain()\n'
        'File "/a/train.py", line 210, in getitem\ndata_dict = preprocess([e["conversations"] for e in s])\n'
        "KeyError: 'conversations'\n"
    )
    assert found[0].exception == "KeyError"
    assert len(found[0].frames) == 2


def test_it_reads_a_rich_boxed_traceback(tmp_path):
    log = write(
        tmp_path / "rich.log",
        (
            "╭───────────── Traceback (most recent call last) ─────────────╮\n"
            "│ /home/u/train.py:88 in main                                  │\n"
            "│                                                              │\n"
            "│ ❱  88 │   batch = next(it)                                   │\n"
            "╰──────────────────────────────────────────────────────────────╯\n"
            "KeyError: 'messages'\n"
        ),
    )
    result = diagnose([log])
    assert result.root_cause.exception == "KeyError"
    assert result.root_cause.frames[0]["function"] == "main"


def test_it_follows_a_chain_to_the_originating_exception(tmp_path):
    log = write(
        tmp_path / "chain.log",
        (
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/subprocess.py", line 526, in run\n'
            "subprocess.CalledProcessError: Command 'ssh node2 hostname' returned non-zero exit status 255.\n"
            "\n"
            "During handling of the above exception, another exception occurred:\n"
            "\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/site-packages/deepspeed/launcher/runner.py", line 470, in main\n'
            "RuntimeError: Using hostfile at /h/hostfile but host=node2 was not reachable via ssh.\n"
        ),
    )
    result = diagnose([log])
    assert result.category == "rendezvous"
    assert result.root_cause.exception == "CalledProcessError"
    assert "exit status 255" in result.root_cause.message


def test_it_reads_a_remote_traceback_from_a_worker(tmp_path):
    log = write(
        tmp_path / "remote.log",
        (
            "multiprocess.pool.RemoteTraceback: \n"
            '"""\n'
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/site-packages/datasets/arrow_dataset.py", line 3352, in _map_single\n'
            '  File "/w/prep.py", line 41, in tokenize_fn\n'
            "    text = example['instruction']\n"
            "KeyError: 'instruction'\n"
            '"""\n'
            "\n"
            "The above exception was the direct cause of the following exception:\n"
            "\n"
            "Traceback (most recent call last):\n"
            '  File "/w/prep.py", line 80, in <module>\n'
            "KeyError: 'instruction'\n"
        ),
    )
    result = diagnose([log])
    assert result.category == "data_schema"
    assert result.root_cause.frames[-1]["function"] == "tokenize_fn"


def test_it_separates_tracebacks_interleaved_from_several_ranks(tmp_path):
    log = write(
        tmp_path / "inter.log",
        (
            "[rank0]: Traceback (most recent call last):\n"
            "[rank1]: Traceback (most recent call last):\n"
            '[rank0]:   File "/w/train.py", line 50, in step\n'
            '[rank1]:   File "/w/train.py", line 71, in __getitem__\n'
            "[rank1]: KeyError: 'prompt'\n"
            "[rank0]: RuntimeError: [gloo] Connection closed by peer [10.0.0.2]:5000\n"
        ),
    )
    result = diagnose([log])
    assert result.failing_rank == 1
    assert result.root_cause.exception == "KeyError"
    assert result.root_cause.frames == [{"file": "/w/train.py", "line": 71, "function": "__getitem__"}]


def test_it_reads_a_traceback_whose_header_was_cut_off(tmp_path):
    log = write(
        tmp_path / "cut.log",
        (
            '  File "/x/hf_argparser.py", line 377, in parse_dict\n'
            '    raise ValueError(f"Some keys are not used by the HfArgumentParser: {sorted(unused_keys)}")\n'
            "ValueError: Some keys are not used by the HfArgumentParser: ['do_predict']\n"
        ),
    )
    result = diagnose([log])
    assert result.root_cause.exception == "ValueError"
    assert result.category == "config_invalid"


def test_it_never_names_the_launcher_wrapper_as_root(tmp_path):
    log = write(
        tmp_path / "w.log",
        (
            "Traceback (most recent call last):\n"
            '  File "/usr/bin/torchrun", line 8, in <module>\n'
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        ),
    )
    result = diagnose([log])
    assert (result.root_cause is None) or result.root_cause.exception != "ChildFailedError"
