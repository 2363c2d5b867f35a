"""A rank left waiting in a collective its peers never called: they finished, it lost the connection."""

from __future__ import annotations

from triage import diagnose

WAITING = """\
[rank2]: Traceback (most recent call last):
[rank2]:   File "/data/exp7/pretrain.py", line 210, in finish
[rank2]:     dist.all_reduce(total)
[rank2]:   File "/env/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2806, in all_reduce
[rank2]:     work.wait()
[rank2]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.1.1.4]:41922
E1105 09:12:44.120000 811 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 2 (pid: 905) of binary: /env/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
pretrain.py FAILED
------------------------------------------------------------
Failures:
{others}
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-05_09:12:44
  host      : trainer-3
  rank      : 2 (local_rank: 2)
  exitcode  : 1 (pid: 905)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""

KILLED_PEER = """\
[1]:
  time      : 2026-11-05_09:12:43
  host      : trainer-3
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 903)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 903"""


def _diagnose(tmp_path, text):
    log = tmp_path / "log.txt"
    log.write_text(text)
    return diagnose([log], command="torchrun --nproc_per_node 4 pretrain.py")


def test_peers_that_finished_leave_a_rank_in_a_collective_a_script_bug(tmp_path):
    result = _diagnose(tmp_path, WAITING.format(others="  <NO_OTHER_FAILURES>"))
    assert (result.category, result.failing_rank) == ("code_bug", 2)
    assert result.root_cause.exception == "RuntimeError"
    assert result.fixes[0]["kind"] == "fix_code" and "collective" in result.summary


def test_a_peer_that_was_killed_is_not_a_script_bug(tmp_path):
    result = _diagnose(tmp_path, WAITING.format(others=KILLED_PEER))
    assert result.category != "code_bug"


def _timed_out(rank, line, function):
    return (f"[rank{rank}]: Traceback (most recent call last):\n"
            f'[rank{rank}]:   File "/jobs/n{rank // 2}/fit.py", line {line}, in {function}\n'
            f"[rank{rank}]:     step()\n"
            f'[rank{rank}]:   File "/env/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
            f"line 4811, in barrier\n"
            f"[rank{rank}]:     work.wait()\n"
            f"[rank{rank}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
            f"Timed out waiting 1800000ms for recv operation to complete\n")


def test_the_one_rank_waiting_at_another_line_is_out_of_step(tmp_path):
    text = "".join(_timed_out(rank, 77, "finish") for rank in (0, 1, 3)) + _timed_out(2, 52, "train_step")
    result = _diagnose(tmp_path, text)
    assert (result.category, result.failing_rank) == ("nccl_timeout", 2)
    assert [fix["kind"] for fix in result.fixes][:2] == ["fix_code", "fix_data_file"]


def test_ranks_waiting_at_the_same_line_name_no_culprit(tmp_path):
    text = "".join(_timed_out(rank, 77, "finish") for rank in range(4))
    result = _diagnose(tmp_path, text)
    assert result.category == "nccl_timeout" and result.failing_rank is None
    assert result.fixes[0]["kind"] == "increase_timeout"


def test_two_ranks_waiting_at_different_lines_diverged_without_a_culprit(tmp_path):
    text = _timed_out(0, 204, "save_full") + _timed_out(1, 209, "finish")
    log = tmp_path / "log.txt"
    log.write_text(text)
    result = diagnose([log], command="torchrun --nproc_per_node 2 fit.py")
    assert result.category == "nccl_timeout" and result.failing_rank is None
    assert result.fixes[0]["kind"] == "fix_code"


def test_one_rank_alone_in_a_collective_while_the_others_only_lost_it(tmp_path):
    lost = ("[rank{r}]: Traceback (most recent call last):\n"
            '[rank{r}]:   File "/job/fit.py", line 300, in step\n'
            "[rank{r}]:     loss.backward()\n"
            "[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
            "[10.0.0.2]:2440\n")
    text = _timed_out(2, 149, "prepare") + lost.format(r=0) + lost.format(r=1)
    log = tmp_path / "log.txt"
    log.write_text(text)
    result = diagnose([log], command="torchrun --nproc_per_node 3 fit.py")
    assert (result.category, result.failing_rank) == ("nccl_timeout", 2)
    assert result.fixes[0]["kind"] == "fix_code"
