"""How a log is copied out of a console changes nothing: a terminal's hard wrapping at its width, a web
page's HTML escaping, a Markdown code block's indent."""

from __future__ import annotations

import html

from triage_helpers import write as write_log

from triage import diagnose
from triage.unwrap import unwrap, wrap_width

FOUR_RANKS = """\
step 40/900 loss 1.882 lr 1.9e-05 grad_norm 0.71 tokens/s 48211 elapsed 00:14:22 eta 04:51:09 mem 61.2G
[rank3]: Traceback (most recent call last):
[rank3]:   File "/srv/jobs/tune/run_sft.py", line 214, in <module>
[rank3]:     main()
[rank3]:   File "/srv/jobs/tune/run_sft.py", line 188, in main
[rank3]:     batch = collate([shard_rows[index] for index in order], pad_to_multiple=args.pad_multiple_of_tokens)
[rank3]:   File "/srv/jobs/tune/collate.py", line 51, in collate
[rank3]:     lengths = [len(row["input_ids_with_system_prompt_prepended"]) for row in rows]
[rank3]: KeyError: 'input_ids_with_system_prompt_prepended'
[rank0]:[E1102 09:15:44.118000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4411, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.
[rank1]:[E1102 09:15:44.121000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4411, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600051 milliseconds before timing out.
"""


def hard_wrap(text: str, width: int) -> str:
    return "\n".join(
        "\n".join(line[at:at + width] for at in range(0, len(line), width)) if len(line) > width else line
        for line in text.split("\n")
    )


def answer(tmp_path, text: str) -> tuple:
    log = tmp_path / "console.txt"
    log.write_text(text, newline="")
    result = diagnose([log])
    return result.category, result.root_cause.exception if result.root_cause else None, result.failing_rank


def test_the_untouched_log_names_rank_3s_missing_field(tmp_path):
    assert answer(tmp_path, FOUR_RANKS) == ("data_schema", "KeyError", 3)


def test_a_console_wrapped_at_its_width_reads_like_the_original(tmp_path):
    wrapped = hard_wrap(FOUR_RANKS, 100)
    assert wrap_width(wrapped.encode().split(b"\n")) == 100
    assert answer(tmp_path, wrapped) == ("data_schema", "KeyError", 3)
    result = diagnose([tmp_path / "console.txt"])
    assert "Watchdog caught collective operation timeout" not in result.root_cause.message


def test_pieces_padded_with_spaces_up_to_the_width_end_at_the_padding():
    lines = [
        "head of a long line that the terminal cut in two places because it is much longer than eighty",
        "another long line, cut once by the same terminal at eighty characters, as terminals do",
        "and one more line that is long enough to be cut once by the terminal too, like the rest",
        "a last one: short",
    ]
    padded = "\n".join(line.ljust(80) for line in hard_wrap("\n".join(lines), 80).split("\n"))
    joined = unwrap(padded.encode()).decode().split("\n")
    assert joined[:3] == lines[:3]
    assert joined[3].rstrip() == lines[3]


def test_lines_that_merely_share_the_longest_length_are_no_width():
    same_template = "\n".join(
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation timeout"
        for rank in range(8))
    assert wrap_width(same_template.encode().split(b"\n")) is None
    box = "\n".join("\u2502 " + word.ljust(40) + " \u2502" for word in ("alpha one", "beta two", "gamma three"))
    assert wrap_width(box.encode().split(b"\n")) is None
    mismatches = "\n".join(f"\tsize mismatch for layers.0.{name}.weight: copying a param with shape [4, 32]"
                           for name in ("q_proj", "k_proj", "v_proj", "o_proj"))
    assert wrap_width(mismatches.encode().split(b"\n")) is None
    assert unwrap(b"short\nlines\nonly\n") is None


def test_a_log_scraped_with_its_html_escaping_reads_like_the_original(tmp_path):
    assert answer(tmp_path, html.escape(FOUR_RANKS)) == ("data_schema", "KeyError", 3)
    result = diagnose([tmp_path / "console.txt"])
    assert result.root_cause.message == "'input_ids_with_system_prompt_prepended'"


def test_a_markdown_code_block_indent_keeps_the_rank_prefixes(tmp_path):
    indented = "\n".join("    " + line for line in FOUR_RANKS.split("\n"))
    assert answer(tmp_path, indented) == ("data_schema", "KeyError", 3)


def test_an_indented_spawn_block_still_names_its_process(tmp_path):
    text = """\
    Traceback (most recent call last):
      File "/home/u/cls/main.py", line 40, in <module>
        mp.spawn(worker, nprocs=4)
    torch.multiprocessing.spawn.ProcessRaisedException:

    -- Process 2 terminated with the following error:
    Traceback (most recent call last):
      File "/home/u/venv/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 90, in _wrap
        fn(i, *args)
      File "/home/u/cls/main.py", line 31, in worker
        images = images.cuda(non_blocking=True)
    RuntimeError: CUDA error: uncorrectable ECC error encountered
"""
    category, exception, rank = answer(tmp_path, text)
    assert (category, rank) == ("hardware", 2)


def test_pdsh_hosts_named_without_digits_are_hosts(tmp_path):
    text = "\n".join([
        "node-b: [2026-11-01 10:00:00,000] [INFO] [launch.py:151:main] nnodes=2, num_local_procs=8, node_rank=1",
        "node-b: Traceback (most recent call last):",
        'node-b:   File "/home/u/chat/main.py", line 300, in <module>',
        "node-b:     main()",
        'node-b:   File "/home/u/venv/lib/python3.10/site-packages/deepspeed/runtime/config.py", line 790, in _batch',
        "node-b:     assert train_batch == micro_batch * grad_acc * self.world_size, (",
        "node-b: AssertionError: Check batch related parameters. train_batch_size is not equal to "
        "micro_batch_per_gpu * gradient_acc_step * world_size 256 != 4 * 8 * 16",
    ]) + "\n"
    category, exception, _rank = answer(tmp_path, text)
    assert (category, exception) == ("config_invalid", "AssertionError")


def test_a_json_loggers_records_keep_their_rank_and_exception(tmp_path):
    import json as _json

    records = [
        {"ts": "2026-12-01T06:00:00.120Z", "level": "INFO", "rank": 3, "msg": "dataloader ready"},
        {"ts": "2026-12-01T06:07:33.915Z", "level": "ERROR", "rank": 3, "msg": "training step failed",
         "exc_type": "KeyError", "exc": "'conversations'"},
        {"ts": "2026-12-01T06:07:36.000Z", "level": "ERROR", "rank": 0, "msg": "collective failed",
         "traceback": "Traceback (most recent call last):\n  File \"/app/train.py\", line 88, in step\n"
                      "    dist.all_reduce(loss)\nRuntimeError: Connection closed by peer [10.0.0.4]:29500\n"},
    ]
    text = "\n".join(_json.dumps(record) for record in records) + "\n"
    category, exception, rank = answer(tmp_path, text)
    assert (category, exception, rank) == ("data_schema", "KeyError", 3)


CACHE_WRITE = """\
Map (num_proc=16):  64%|██████▍   | 20480/32000 [03:11<01:48, 106.2 examples/s]
Traceback (most recent call last):
  File "/opt/env/lib/python3.11/site-packages/datasets/arrow_writer.py", line 601, in write_batch
    self.write_table(table, writer_batch_size)
  File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status
OSError: [Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/home/ops/prep/tokenize_corpus.py", line 41, in <module>
    corpus = corpus.map(encode, batched=True, num_proc=16)
datasets.builder.DatasetGenerationError: An error occurred while generating the dataset
"""


def test_the_same_failure_twice_reads_like_once(tmp_path):
    # an elastic restart, or a paste repeated: the second copy is the same failure again, so the first copy's
    # write error is not "caught" because another traceback follows it, and the next copy's progress bar is
    # not the rest of the first copy's message
    once = diagnose([write_log(tmp_path / "once.log", CACHE_WRITE)])
    twice = diagnose([write_log(tmp_path / "twice.log", CACHE_WRITE + CACHE_WRITE)])
    assert (once.category, once.root_cause.exception) == ("storage", "OSError")
    assert (twice.category, twice.root_cause.exception) == ("storage", "OSError")
    assert "num_proc" not in twice.root_cause.message
