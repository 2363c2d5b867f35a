"""A post's title quotes the error in its own words ("RuntimeError: ..."); the traceback below raised it with
its real class. The traceback is the root exception."""

from __future__ import annotations

from pathlib import Path

from triage import diagnose

MESSAGE = ("The server socket has failed to listen on any local network address. port: 41177, useIpv6: 0, code: -98, "
           "name: EADDRINUSE, message: address already in use")


def test_the_traceback_below_a_title_names_the_class(tmp_path):
    text = (f"RuntimeError: {MESSAGE}\n\nStarting the weight-sync group fails every time:\n\n"
            "Traceback (most recent call last):\n"
            '  File "/work/rl/sync.py", line 30, in init_group\n'
            "    store = TCPStore(host, port, world, is_master=True)\n"
            f"torch.distributed.DistNetworkError: {MESSAGE}\n")
    (tmp_path / "post.md").write_text(text)
    result = diagnose([tmp_path / "post.md"])
    assert result.category == "rendezvous"
    assert result.root_cause.exception == "DistNetworkError"


def test_a_title_alone_is_still_the_exception(tmp_path):
    (tmp_path / "post.md").write_text(f"RuntimeError: {MESSAGE}\n\nIt happens on every launch.\n")
    result = diagnose([tmp_path / "post.md"])
    assert result.root_cause.exception == "RuntimeError"


def test_a_kernel_assertion_quoted_as_a_title_is_surfaced_by_the_exception_after_its_later_print():
    # blind51's form: the post opens with one assertion line, the log repeats it many times, and every rank's
    # RuntimeError follows further down than a screenful from the first print
    case = Path(__file__).parent / "fixtures" / "blind51" / "b51-accelerate-ppo-qwen-tokenizer-pythia-policy-index-assert"
    result = diagnose([case / "issue_body.md"], command=(case / "command.txt").read_text())
    assert result.category == "cuda_error"
    assert result.root_cause.exception == "RuntimeError"


def test_a_title_that_speaks_of_an_nccl_error_is_not_one(tmp_path):
    text = ("**NCCL error after 15 steps, FSDP on two GPUs**\n\nThe loop saves a full state dict at step 15, then:\n\n"
            "[rank1]:[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=812, OpType=_ALLGATHER_BASE, NumelIn=1048576, NumelOut=2097152, Timeout(ms)=600000) "
            "ran for 600112 milliseconds before timing out.\n")
    (tmp_path / "post.md").write_text(text)
    assert diagnose([tmp_path / "post.md"]).category == "nccl_timeout"
    (tmp_path / "err.log").write_text("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, "
                                      "unhandled cuda error, NCCL version 2.19.3\n")
    assert diagnose([tmp_path / "err.log"]).category == "nccl_error"
