"""A library's own restore function missing an entry it expects reads the checkpoint given to it as another kind
of checkpoint (model_load); the same KeyError in the team's own code stays the team's bug."""

from __future__ import annotations

from tests.triage.triage_helpers import diagnose_text


def _keyerror(function: str, path: str) -> str:
    return ("Traceback (most recent call last):\n"
            '  File "/home/ro/tts/recipes/train_vocoder.py", line 88, in <module>\n'
            "    main()\n"
            f'  File "{path}", line 512, in {function}\n'
            '    self.total_steps_done = checkpoint["step"]\n'
            "KeyError: 'step'\n")


def test_a_librarys_restore_function_missing_an_entry_is_the_checkpoint(tmp_path):
    result = diagnose_text(tmp_path, _keyerror("restore_model", "/opt/venv/lib/python3.10/site-packages/trainer/trainer.py"),
                           command="python -m trainer.distribute --script train_vocoder.py --restore_path /ckpt/release.pth")
    assert result.category == "model_load"
    assert result.root_cause.exception == "KeyError"
    assert result.fixes[0]["kind"] == "fix_path"


def test_the_same_key_missing_in_the_teams_own_restore_is_their_code(tmp_path):
    result = diagnose_text(tmp_path, _keyerror("restore_model", "/home/ro/tts/recipes/checkpointing.py"))
    assert result.category == "code_bug"
