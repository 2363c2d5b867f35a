"""Turn the user's launch command into the one that runs in the sandbox.

The model becomes a tiny random-initialised one of the same family (built locally), the data the
uploaded sample, at most 2 processes with gloo on CPU, a few steps, outputs in the work dir. Every
other flag is kept as written, so a renamed flag or a contradictory combination fails as it did.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from triage.commandline import normalise_key, parse_command

MODEL_KEYS = {"model_name_or_path", "model_name", "model_path", "model", "model_id", "base_model",
              "pretrained_model_name_or_path", "tokenizer_name_or_path", "tokenizer_name", "tokenizer"}
DATA_KEYS = {"data_path", "train_file", "train_data", "train_path", "dataset_path", "data_file", "train_dataset",
             "dataset", "data", "dataset_name"}
LENGTH_KEYS = {"model_max_length", "max_seq_length", "max_seq_len", "cutoff_len", "max_length", "seq_len",
               "block_size", "max_source_length"}
DROP_KEYS = {"deepspeed", "report_to", "run_name", "hub_model_id", "push_to_hub", "resume_from_checkpoint",
             "cache_dir", "logging_dir", "local_rank"}
REFERENCE_SCRIPT = "/triage/runtime/reference_train.py"
FAMILY_PATTERNS = [
    (r"qwen3", "qwen3"), (r"qwen", "qwen2"), (r"mi[sx]tral|zephyr", "mistral"), (r"gemma-?2", "gemma2"),
    (r"gemma", "gemma"), (r"phi-?3", "phi3"), (r"phi", "phi"), (r"gpt-?2", "gpt2"),
    (r"pythia|neox", "gpt_neox"), (r"falcon", "falcon"), (r"\bopt\b|opt-", "opt"), (r"bloom", "bloom"),
]


class NotLaunchable(Exception):
    """The command cannot run on a CPU sandbox (the reason says why)."""


@dataclass
class LaunchPlan:
    argv: list[str]
    family: str
    nproc: int
    script: str
    changes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        import shlex

        return shlex.join(self.argv)


def family_of(model: str | None) -> str:
    lowered = (model or "").lower()
    for pattern, family in FAMILY_PATTERNS:
        if re.search(pattern, lowered):
            return family
    return "llama"


def _script_args(cmd) -> list[str]:
    if cmd.script_index is None:
        return []
    return [token.value for token in cmd.line.tokens[cmd.script_index + 1: cmd.segment_end]
            if not token.is_operator]


def _launcher_nproc(cmd) -> int:
    for key in ("nproc_per_node", "num_processes", "num_gpus", "nproc-per-node"):
        value = cmd.value(key, where="launcher")
        if value and value.isdigit():
            return int(value)
    return 2 if cmd.launcher == "torchrun" else 1


def rewrite_args(args: list[str], *, data_name: str | None, length_cap: int, batch_size: int | None = None,
                 changes: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if not word.startswith("--"):
            out.append(word)
            i += 1
            continue
        name, eq, inline = word.partition("=")
        key = normalise_key(name.lstrip("-"))
        has_value = bool(eq) or (i + 1 < len(args) and not args[i + 1].startswith("--"))
        value = inline if eq else (args[i + 1] if has_value else None)
        step = 1 if eq or not has_value else 2
        i += step
        if key in DROP_KEYS:
            changes.append(f"dropped {name}")
            continue
        if key in MODEL_KEYS and value is not None:
            value, note = "/work/tiny-model", f"{name}: tiny random-initialised model"
        elif key in DATA_KEYS and value is not None and data_name:
            value, note = f"/work/in/{data_name}", f"{name}: the uploaded sample"
        elif key == "output_dir" and value is not None:
            value, note = "/work/tmp/out", None
        elif key in LENGTH_KEYS and value is not None and value.isdigit() and int(value) > length_cap:
            value, note = str(length_cap), f"{name} {value} -> {length_cap}"
        elif key == "max_steps" and value is not None:
            value, note = "3", None
        elif key == "per_device_train_batch_size" and batch_size and value is not None:
            value, note = str(batch_size), f"{name} {value} -> {batch_size}"
        else:
            note = None
        if note:
            changes.append(note)
        out += [f"{name}={value}"] if eq else ([name, value] if value is not None else [name])
    return out


def plan(command: str, *, data_name: str | None, script_name: str | None = None, master_port: int = 29400,
         length_cap: int = 128, max_procs: int = 2, batch_size: int | None = None) -> LaunchPlan:
    cmd = parse_command(command)
    if cmd.launcher == "deepspeed" or cmd.flag("deepspeed") is not None and cmd.launcher != "torchrun":
        raise NotLaunchable("DeepSpeed's launcher and ZeRO need GPUs")
    if cmd.script is None:
        raise NotLaunchable("no training script in the launch command")
    changes: list[str] = []
    args = rewrite_args(_script_args(cmd), data_name=data_name, length_cap=length_cap, batch_size=batch_size,
                        changes=changes)
    keys = {normalise_key(a.split("=")[0].lstrip("-")) for a in args if a.startswith("--")}
    if script_name:
        script = f"/work/in/{script_name}"
        changes.append(f"{cmd.script}: the uploaded script")
    else:
        script = REFERENCE_SCRIPT
        changes.append(f"{cmd.script}: the reference HF-style training script")
        for key, value in (("output_dir", "/work/tmp/out"), ("max_steps", "3"), ("use_cpu", "True"),
                           ("report_to", "none"), ("save_strategy", "no"), ("logging_steps", "1"),
                           ("dataloader_num_workers", "0"), ("model_name_or_path", "/work/tiny-model")):
            if key not in keys:
                args += [f"--{key}", value]
        if data_name and not (keys & DATA_KEYS):
            args += ["--data_path", f"/work/in/{data_name}"]
    model = next((cmd.value(k) for k in MODEL_KEYS if cmd.value(k)), None)
    family = family_of(model)
    nproc = max(1, min(_launcher_nproc(cmd), max_procs))
    if nproc != _launcher_nproc(cmd):
        changes.append(f"{_launcher_nproc(cmd)} processes -> {nproc} (gloo on CPU)")
    if cmd.launcher in ("torchrun", "accelerate") or nproc > 1:
        launch = ["python", "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), "--nnodes", "1",
                  "--master_addr", "127.0.0.1", "--master_port", str(master_port)]
    else:
        launch = ["python"]
    target = ["-m", cmd.script] if cmd.script_is_module and not script_name else [script]
    argv = ["python", "/triage/runtime/launch.py", "--family", family, "--", *launch, *target, *args]
    return LaunchPlan(argv=argv, family=family, nproc=nproc, script=script, changes=changes)
