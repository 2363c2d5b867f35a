"""Renamed or removed flags and version pins."""
from __future__ import annotations

import re

from triage.rules.config import removed_training_args

from .common import Edits, evidence_text

# old flag -> (new flag, package, version that still accepts the old one, note)
RENAMES: dict[str, tuple[str, str, str, str]] = {
    "evaluation_strategy": ("eval_strategy", "transformers", "transformers<4.46",
                            "renamed in transformers 4.41; the old name is gone from 4.46"),
    "per_gpu_train_batch_size": ("per_device_train_batch_size", "transformers", "transformers<4.0",
                                 "deprecated since transformers 3.x"),
    "per_gpu_eval_batch_size": ("per_device_eval_batch_size", "transformers", "transformers<4.0",
                                "deprecated since transformers 3.x"),
    "no_cuda": ("use_cpu", "transformers", "transformers<4.38", "renamed in transformers 4.34"),
    "push_to_hub_model_id": ("hub_model_id", "transformers", "transformers<4.30", "renamed in transformers 4.x"),
    "fp16_backend": ("half_precision_backend", "transformers", "transformers<4.30", "renamed in transformers 4.10"),
    "use_auth_token": ("token", "transformers", "transformers<4.40", "deprecated in transformers 4.34"),
    "tokenizer_name_or_path": ("tokenizer_name", "transformers", "", "examples use --tokenizer_name"),
    "max_seq_length": ("max_length", "trl", "trl<0.20", "TRL's SFTConfig renamed it (0.16+)"),
}
_PIN = re.compile(r"\b([A-Za-z][\w.-]*)\s*(==|>=|<=|~=|!=|<|>)\s*(\d+(?:\.\d+)*[\w.]*)")
_FROM = re.compile(r"cannot import name '[^']+' from '([\w.]+)'|No module named '([\w.]+)'")


AMBIGUOUS = {"max_seq_length", "use_auth_token", "tokenizer_name_or_path"}  # still valid in many scripts


def _mentioned(ctx, cmd) -> list[str]:
    """Renamed flags named by the evidence, plus unambiguous ones present in the command."""
    text = evidence_text(ctx)
    present = {f.key for f in cmd.script_flags}
    hits = [old for old in RENAMES if old in present and old not in AMBIGUOUS]
    for old in RENAMES:
        if old not in hits and re.search(rf"\b{old}\b", text):
            hits.append(old)
    return hits


def rename_flag(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    hits = _mentioned(ctx, edits.cmd)
    removed = removed_training_args(evidence_text(ctx) + "\n" + (ctx.message or ""))
    if not hits and removed:
        for key in removed:
            edits.rw.remove_flag((key,))
        return edits.fix(kind, f"Drop the settings transformers 5 removed: {', '.join(removed)}",
                         "The recipe was written for transformers 4.x; these TrainingArguments fields no longer exist.",
                         notes=[f"delete {', '.join(removed)} from the config (or the command); transformers 5 "
                                "always writes to output_dir and logs under it",
                                "or keep the recipe and install transformers<5"])
    if not hits:
        unknown = re.search(r"unrecognized arguments: (--?[\w-]+)", evidence_text(ctx))
        if unknown:
            flag = unknown.group(1)
            edits.rw.remove_flag((flag,))
            return edits.fix(kind, f"Remove {flag}: this version does not accept it",
                             "The script's argument parser rejected the flag; it was renamed or removed.",
                             notes=["check the script's --help for the current name"])
        return edits.fix(kind, "Replace the renamed flag", "A flag of this command was renamed or removed.",
                         notes=["compare the flags with the installed version's --help"])
    notes, pins = [], []
    for old in hits:
        new, _package, pin, note = RENAMES[old]
        if not edits.rw.rename_flag((old,), "--" + new):
            # not on the command line: the script's own code passes it (TrainingArguments(evaluation_strategy=...))
            where = "code" if ctx.command else "script"
            edits.rw.changes.append({"where": where, "flag": "--" + old, "old": "--" + old, "new": "--" + new})
            if ctx.command:
                notes.append(f"the command does not pass --{old}: rename the keyword {old}= to {new}= in the "
                             "script's code, or pin the older version")
        notes.append(f"--{old} -> --{new}: {note}")
        if pin:
            pins.append(pin)
    if pins:
        notes.append("or keep the old flag and pin: pip install " + " ".join(f"'{p}'" for p in sorted(set(pins))))
    title = ", ".join(f"--{old} -> --{RENAMES[old][0]}" for old in hits)
    return edits.fix(kind, f"Use the new flag name ({title})",
                     "The installed release renamed or removed the flag, so parsing or the dataclass init fails.",
                     notes=notes, packages=sorted(set(pins)))


def pin_versions(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    text = evidence_text(ctx)
    pins = []
    wording = " ".join(p for p in re.split(r"[\n.;] ", text) if re.search(r"requir|version|install", p, re.I))
    for package, op, version in _PIN.findall(wording):
        if package.lower() in ("python", "cuda", "torch.cuda") or package[0].isdigit():
            continue
        pins.append(f"{package}{op}{version}")
    for old in _mentioned(ctx, edits.cmd):
        if RENAMES[old][2]:
            pins.append(RENAMES[old][2])
    notes = []
    if "undefined symbol" in text:
        notes.append("an extension was built against another torch: reinstall it for the installed torch, e.g. "
                     "pip install --force-reinstall --no-build-isolation flash-attn")
    modules = [a or b for a, b in _FROM.findall(text)]
    if modules and not pins:
        package = modules[0].split(".")[0]
        notes.append(f"{package} does not provide what the script imports: install the version the script "
                     f"was written for (see its requirements.txt) or upgrade: pip install -U {package}")
    pins = sorted(set(pins))
    shell = [f"pip install {' '.join(repr(p) for p in pins)}".replace('"', "'")] if pins else []
    notes.append("record the working set with: pip freeze > requirements.lock")
    title = f"Install matching versions ({', '.join(pins)})" if pins else "Install the versions the script expects"
    return edits.fix(kind, title, "The installed packages do not match what the script or each other expect.",
                     notes=notes, shell=shell, packages=pins, cost="medium")
