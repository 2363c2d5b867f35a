"""Which change comes first for a loss that went NaN/inf: the step size, the rank's batch, or one term's code."""

from __future__ import annotations

import pytest

from triage import diagnose
from triage.rules.numerical import non_finite_terms


def _two_ranks(tmp_path, message: str, culprit: int = 1):
    other = 1 - culprit
    lines = [
        f"[rank{culprit}]: Traceback (most recent call last):",
        f'[rank{culprit}]:   File "/srv/lm/train.py", line 210, in train',
        f"[rank{culprit}]:     raise FloatingPointError(msg)",
        f"[rank{culprit}]: FloatingPointError: {message}",
        f"[rank{other}]: Traceback (most recent call last):",
        f'[rank{other}]:   File "/srv/lm/train.py", line 198, in train',
        f"[rank{other}]:     loss.backward()",
        f"[rank{other}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
        "[127.0.0.1]:48211",
    ]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    return diagnose([tmp_path / "train.log"], command="torchrun --nproc_per_node 2 train.py")


def test_one_rank_in_its_first_steps_checks_its_batch_first(tmp_path):
    result = _two_ranks(tmp_path, "loss is nan at step 4 on rank 1")
    assert result.category == "numerical" and result.failing_rank == 1
    assert [fix["kind"] for fix in result.fixes][:2] == ["fix_data_file", "fix_numerics"]


def test_a_late_step_keeps_the_step_size_first(tmp_path):
    result = _two_ranks(tmp_path, "loss is nan at step 4180 on rank 1")
    assert result.fixes[0]["kind"] == "fix_numerics"


def test_rank_zero_alone_is_not_evidence_of_its_batch(tmp_path):
    # a script that checks the loss on rank 0 only: rank 0 reporting alone says nothing about its batch
    result = _two_ranks(tmp_path, "loss is nan at step 4", culprit=0)
    assert result.fixes[0]["kind"] == "fix_numerics"


def test_one_term_of_the_loss_non_finite_points_at_that_terms_code(tmp_path):
    result = _two_ranks(tmp_path, "loss is nan at step 40 on rank 1 (ce=4.21 balance=nan z=0.93)")
    first = result.fixes[0]
    assert first["kind"] == "fix_code"
    assert "balance" in first["title"]


@pytest.mark.parametrize("message, terms", [
    ("loss is nan at step 13 (ce=4.7841 aux=nan z=3.9628)", ["aux"]),
    ("non-finite distillation loss nan at step 0 (kl=nan, ce=4.70)", ["kl"]),
    ("churn=0.69, plan=1.37, spend=inf", ["spend"]),
    # every term non-finite, or only the step and the learning rate beside it: not one term's doing
    ("ce=nan aux=nan", []),
    ("loss=nan at step=12 lr=3e-4 grad_norm=1.2", []),
    # a progress bar's validation loss is not a term of the training loss
    ("Epoch 3: 62%| 721/1172 [02:34<01:36, 4.66it/s, v_num=q2x8, train_loss=nan, val_loss=0.251]", []),
    # nor is a trainer's update counter in its postfix
    ("Epoch 9/12:  40%| 811/2020 [03:12<04:47, 4.2update/s, update=431000, loss=nan]", []),
    # nor are a trainer's timings beside its total loss ("Loss: nan (nan) ... Data time: 0.02(0.03)")
    ("Train: 1/20 [2999/7724]  Loss: nan (nan)  LR: 2.0e-04  Data time: 0.02(0.03)  Forward time: 0.74(0.75)", []),
])
def test_non_finite_terms(message, terms):
    assert non_finite_terms(message) == terms


def test_a_bare_assertion_raised_after_a_logged_nan_is_the_root_exception(tmp_path):
    # the script logs what it found, then stops on an assert with no message of its own
    from tests.triage.triage_helpers import diagnose_text

    text = ("I20240301 10:00:01 5120 ssl train.py:250] iteration 1, loss nan\n"
            "I20240301 10:00:01 5120 ssl train.py:261] NaN detected\n"
            "Traceback (most recent call last):\n"
            '  File "/work/ssl/train.py", line 262, in do_train\n'
            "    raise AssertionError\n"
            "AssertionError\n")
    result = diagnose_text(tmp_path, text, command="torchrun --nproc_per_node 2 train.py")
    assert result.category == "numerical"
    assert result.root_cause.exception == "AssertionError"


def test_a_trainers_progress_line_with_a_nan_loss_is_numerical(tmp_path):
    from tests.triage.triage_helpers import diagnose_text

    text = "".join(
        f"2024-02-01 10:{minute:02d}:00,000   INFO  Train:    1/20 [{step}/7724]  Loss: {loss}  LR: 2.0e-04  "
        "Data time: 0.02(0.03)  Batch time: 0.76(0.78)\n"
        for minute, step, loss in ((1, 2950, "1.874 (2.26)"), (2, 3000, "nan (nan)"), (3, 3050, "nan (nan)")))
    result = diagnose_text(tmp_path, text, command="python -m torch.distributed.launch --nproc_per_node 8 train.py")
    assert (result.category, result.fixes[0]["kind"]) == ("numerical", "fix_numerics")
