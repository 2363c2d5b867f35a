"""Parse a launch command into env, wrappers, launcher, launcher flags, script, script flags.

Recognised shapes (any mix, in this order):
  [VAR=v ...] [env [-u X] VAR=v ...] [srun|sbatch|salloc|mpirun|nohup|time ... opts]
  torchrun | python -m torch.distributed.run|launch | deepspeed | accelerate launch |
  python [-u] script.py | python -m module | bash x.sh | any-cli [sub] ...
  then the script's own flags: --flag value, --flag=value, --switch, -x v, key=value.
Everything refers back to token indices of the lossless TokenLine, so rewrites change
only the tokens they touch (see rewrite.py). Parsing never raises.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .tokens import TokenLine, tokenize

WRAPPERS = {"srun", "sbatch", "salloc", "mpirun", "mpiexec", "nohup", "time", "exec", "stdbuf", "numactl"}
WRAPPER_SWITCHES = {
    "-l", "--label", "--pty", "-u", "--unbuffered", "--exclusive", "-v", "-Q", "--quiet", "--overlap",
    "-K", "--allow-run-as-root", "--oversubscribe", "--tag-output", "--report-bindings",
}
LAUNCHER_SWITCHES = {
    "torchrun": {"standalone", "use_env", "no_python", "module", "m", "run_path", "monitor_interval_off"},
    "deepspeed": {"no_ssh_check", "no_python", "no_local_rank", "force_multi", "save_pid",
                  "bind_cores_to_rank", "elastic_training", "module", "no_ssh", "autotuning_off"},
    "accelerate": {"multi_gpu", "cpu", "use_deepspeed", "use_fsdp", "use_megatron_lm", "m", "module",
                   "no_python", "debug", "quiet", "tpu", "use_xpu", "same_network", "rdzv_conf_off"},
}
TORCH_RUN_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NUMBER = re.compile(r"^-?\d+(\.\d*)?([eE][-+]?\d+)?$")
_PYTHON = re.compile(r"^python[\d.]*$")


@dataclass
class Flag:
    name: str  # as written, before any "=": "--per_device_train_batch_size", "-c", "model"
    key: str  # normalised: "per_device_train_batch_size" (dashes -> underscores, lower case)
    name_index: int
    value_index: int | None = None  # a separate value token
    inline: bool = False  # written --name=value (or key=value)
    value: str | None = None  # unquoted value; None for a bare switch


@dataclass
class LaunchCommand:
    line: TokenLine
    env: dict[str, str] = field(default_factory=dict)
    env_index: dict[str, int] = field(default_factory=dict)
    segment_start: int = 0  # first token of the launching segment (new env goes before it)
    segment_end: int = 0  # one past its last token
    wrappers: list[str] = field(default_factory=list)
    wrapper_flags: list[Flag] = field(default_factory=list)
    launcher: str = "unknown"  # torchrun|deepspeed|accelerate|python|shell|<cli name>|unknown
    launcher_index: int | None = None
    launcher_flags: list[Flag] = field(default_factory=list)
    script: str | None = None
    script_index: int | None = None
    script_is_module: bool = False
    script_flags: list[Flag] = field(default_factory=list)
    positionals: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.line.text

    def flag(self, *keys: str, where: str = "script") -> Flag | None:
        """The last occurrence of any of `keys` (last one wins, as with argparse)."""
        flags = {"script": self.script_flags, "launcher": self.launcher_flags, "wrapper": self.wrapper_flags}[where]
        wanted = {normalise_key(k) for k in keys}
        found = [f for f in flags if f.key in wanted]
        return found[-1] if found else None

    def value(self, *keys: str, where: str = "script") -> str | None:
        found = self.flag(*keys, where=where)
        return found.value if found else None


def normalise_key(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower()


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not _NUMBER.match(word)


def _looks_like_program(word: str) -> bool:
    base = os.path.basename(word)
    return (
        base in WRAPPERS or base in ("torchrun", "deepspeed", "accelerate", "env") or bool(_PYTHON.match(base))
        or base.endswith((".py", ".sh"))
    )


def _read_flags(cmd: LaunchCommand, i: int, end: int, switches: set[str], stop_at_word: bool) -> tuple[list[Flag], int]:
    """Read flags from token i; stop at the first plain word when stop_at_word (launcher options)."""
    tokens = cmd.line.tokens
    flags: list[Flag] = []
    while i < end:
        word = tokens[i].value
        if _is_flag(word):
            name, eq, inline_value = word.partition("=")
            flag = Flag(name=name, key=normalise_key(name), name_index=i)
            if eq:
                flag.inline, flag.value = True, inline_value
            elif (
                normalise_key(name) not in switches and name not in switches and i + 1 < end
                and not _is_flag(tokens[i + 1].value)
                and not (stop_at_word and _looks_like_program(tokens[i + 1].value))
            ):
                flag.value_index, flag.value = i + 1, tokens[i + 1].value
                i += 1
            flags.append(flag)
            i += 1
        elif stop_at_word:
            break
        else:
            key, eq, kv_value = word.partition("=")
            if eq and re.match(r"^[\w.+~/-]+$", key):  # hydra / mmf style key=value
                flags.append(Flag(name=key, key=normalise_key(key), name_index=i, inline=True, value=kv_value))
            else:
                cmd.positionals.append(i)
            i += 1
    return flags, i


def _choose_segment(line: TokenLine) -> tuple[int, int]:
    segments, start = [], 0
    for idx, token in enumerate(line.tokens):
        if token.is_operator:
            segments.append((start, idx))
            start = idx + 1
    segments.append((start, len(line.tokens)))
    for seg_start, seg_end in segments:
        words = [t.value for t in line.tokens[seg_start:seg_end] if not _ENV_ASSIGN.match(t.value)]
        if words and _looks_like_program(words[0]):
            return seg_start, seg_end
    return max(segments, key=lambda seg: seg[1] - seg[0])


def parse_command(text: str | None) -> LaunchCommand:
    line = tokenize(text or "")
    cmd = LaunchCommand(line=line)
    try:
        _parse_into(cmd)
    except Exception:  # odd input must never break a diagnosis
        cmd.launcher = "unknown"
    return cmd


def _parse_into(cmd: LaunchCommand) -> None:
    tokens = cmd.line.tokens
    cmd.segment_start, end = _choose_segment(cmd.line)
    cmd.segment_end = end
    i = cmd.segment_start
    while i < end:
        word = tokens[i].value
        base = os.path.basename(word)
        if _ENV_ASSIGN.match(word):
            name, _, env_value = word.partition("=")
            cmd.env[name], cmd.env_index[name] = env_value, i
            i += 1
        elif base == "env":
            cmd.wrappers.append("env")
            i += 1
            while i < end and tokens[i].value in ("-u", "-i", "--unset"):
                i += 2 if tokens[i].value != "-i" else 1
        elif base in WRAPPERS:
            cmd.wrappers.append(base)
            flags, i = _read_flags(cmd, i + 1, end, WRAPPER_SWITCHES, stop_at_word=True)
            cmd.wrapper_flags.extend(flags)
            if base == "sbatch" and i < end:
                cmd.launcher, cmd.launcher_index = "sbatch", i - 1
                _read_script(cmd, i, end)
                return
        else:
            break
    if i >= end:
        return
    word = tokens[i].value
    base = os.path.basename(word)
    if _is_flag(word):  # a fragment that starts with the script's flags
        cmd.script_flags, _ = _read_flags(cmd, i, end, set(), stop_at_word=False)
        return
    cmd.launcher_index = i
    if base == "torchrun":
        _read_launcher(cmd, "torchrun", i + 1, end)
    elif base == "deepspeed":
        _read_launcher(cmd, "deepspeed", i + 1, end)
    elif base == "accelerate" and i + 1 < end and tokens[i + 1].value == "launch":
        _read_launcher(cmd, "accelerate", i + 2, end)
    elif _PYTHON.match(base):
        _read_python(cmd, i + 1, end)
    elif base in ("bash", "sh"):
        cmd.launcher = "shell"
        _read_script(cmd, i + 1, end)
    else:
        cmd.launcher = base
        # a CLI with a subcommand (llamafactory-cli train x.yaml): its flags are the script flags
        cmd.script_flags, _ = _read_flags(cmd, i + 1, end, set(), stop_at_word=False)


def _read_launcher(cmd: LaunchCommand, launcher: str, i: int, end: int) -> None:
    cmd.launcher = launcher
    cmd.launcher_flags, i = _read_flags(cmd, i, end, LAUNCHER_SWITCHES[launcher], stop_at_word=True)
    if cmd.flag("m", "module", where="launcher") and i < end:
        cmd.script_is_module = True
    _read_script(cmd, i, end)


def _read_python(cmd: LaunchCommand, i: int, end: int) -> None:
    tokens = cmd.line.tokens
    cmd.launcher = "python"
    while i < end and _is_flag(tokens[i].value) and tokens[i].value != "-m":
        i += 2 if tokens[i].value in ("-W", "-X") else 1
    if i < end and tokens[i].value == "-m" and i + 1 < end:
        module = tokens[i + 1].value
        if module in TORCH_RUN_MODULES:
            _read_launcher(cmd, "torchrun", i + 2, end)
            return
        if module.startswith("accelerate.commands.launch"):
            _read_launcher(cmd, "accelerate", i + 2, end)
            return
        if module.startswith("deepspeed.launcher"):
            _read_launcher(cmd, "deepspeed", i + 2, end)
            return
        cmd.script_is_module = True
        i += 1
    _read_script(cmd, i, end)


def _read_script(cmd: LaunchCommand, i: int, end: int) -> None:
    if i < end:
        cmd.script, cmd.script_index = cmd.line.tokens[i].value, i
        cmd.script_flags, _ = _read_flags(cmd, i + 1, end, set(), stop_at_word=False)


def unparse(cmd: LaunchCommand) -> str:
    return cmd.line.render()
