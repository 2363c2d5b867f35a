"""A checkpoint that reads as cut short: the run's own earlier save (resuming) is a storage failure, a
pretrained model's weights file is a model that cannot be loaded."""

from __future__ import annotations

import pytest

from triage import diagnose

SITE = "/opt/venv/lib/python3.11/site-packages"


def _log(frames: list[tuple[str, str, str]], error: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, function, code in frames:
        lines += [f'  File "{path}", line 88, in {function}', f"    {code}"]
    lines += [f'  File "{SITE}/torch/serialization.py", line 1568, in load',
              "    with _open_zipfile_reader(opened_file) as opened_zipfile:", error]
    return "\n".join(lines) + "\n"


ZIP = "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory"
PICKLE = "_pickle.UnpicklingError: unpickling stack underflow"


@pytest.mark.parametrize("frames, error, command", [
    # the script's own resume function
    ([("/jobs/ab12/fit.py", "main", "state = restore_run(args.state_file)"),
      ("/jobs/ab12/fit.py", "restore_run", "return torch.load(p, map_location='cpu')")], ZIP, None),
    # a plain torch.load in the script, on a launch that names the checkpoint to resume from
    ([("/jobs/ab12/fit.py", "main", "blob = torch.load(os.path.join(d, 'state.pt'))")], PICKLE,
     "torchrun --nproc_per_node 4 fit.py --resume runs/v2/step-400 --out runs/v2"),
    # the Trainer's own resume path
    ([("/jobs/ab12/sft.py", "<module>", "trainer.train(resume_from_checkpoint=True)"),
      (f"{SITE}/transformers/trainer.py", "_load_rng_state", "checkpoint_rng_state = torch.load(rng_file)")],
     ZIP, None),
])
def test_a_damaged_checkpoint_the_run_resumes_from_is_storage(tmp_path, frames, error, command):
    log = tmp_path / "job.log"
    log.write_text(_log(frames, error))
    result = diagnose([log], command=command)
    assert result.category == "storage"
    first = result.fixes[0]
    assert first["kind"] == "fix_path"
    assert first["title"] == "Resume from the previous complete checkpoint"
    if command:
        assert any("ls -lt runs/v2" in step for step in first.get("shell", [])) or "ls -lt runs/v2" in str(first)


@pytest.mark.parametrize("frames, command", [
    # pretrained weights read through transformers
    ([("/jobs/ab12/sft.py", "main", "model = AutoModelForCausalLM.from_pretrained(args.model)"),
      (f"{SITE}/transformers/modeling_utils.py", "load_state_dict", "return torch.load(checkpoint_file)")], None),
    # the script's own init weights, with resuming switched off on the command line
    ([("/jobs/ab12/fit.py", "main", "model.load_state_dict(torch.load(args.init_from))")],
     "torchrun --nproc_per_node 2 fit.py --init_from base/init.pt --resume none"),
])
def test_damaged_weights_that_are_not_a_resume_stay_model_load(tmp_path, frames, command):
    log = tmp_path / "job.log"
    log.write_text(_log(frames, ZIP))
    result = diagnose([log], command=command)
    assert result.category == "model_load"
    assert result.fixes[0]["title"] != "Resume from the previous complete checkpoint"
