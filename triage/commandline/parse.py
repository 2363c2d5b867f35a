"""Parse a launch command into env, wrappers, launcher, launcher flags, script, script flags.

A pasted script may hold several commands (one per node after `# node 0` / `# node 1`
comments, joined by `&&` or `;`, one a line, with `export` lines above): `parse_script`
splits it into commands and marks the ones that launch training (`Script.launches`);
`parse_command` returns the first of those, so a fix reads one node's values and
`Rewrite` changes every node the same way.

Recognised shapes of one command (any mix, in this order):
  [VAR=v ...] [env [-u X] VAR=v ...] [srun|sbatch|salloc|mpirun|nohup|time ... opts]
  [docker run|exec [opts] IMAGE|CONTAINER]
  torchrun | python -m torch.distributed.run|launch | deepspeed | accelerate launch |
  python [-u] script.py | python -m module | bash x.sh | any-cli [sub] ...
  then the script's own flags: --flag value, --flag=value, --switch, -x v, key=value.
Everything refers back to token indices of the lossless TokenLine, so rewrites change
only the tokens they touch (see rewrite.py). Parsing never raises.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

from .tokens import TokenLine, tokenize

WRAPPERS = {"srun", "sbatch", "salloc", "mpirun", "mpiexec", "nohup", "time", "exec", "stdbuf", "numactl",
            # process limits and scheduling a job is run under: `timeout 60`, `prlimit --as=...`, `nice -n 5`
            "timeout", "prlimit", "nice", "ionice", "taskset", "setsid", "chrt"}
# wrappers whose first word after their options is an argument of theirs, not the command: `timeout 2h`,
# `taskset 0xff`, `chrt 50`
_WRAPPER_ARGUMENT = {"timeout": re.compile(r"^\d+(?:\.\d+)?[smhd]?$"), "taskset": re.compile(r"^(?:0x)?[0-9a-fA-F,-]+$"),
                     "chrt": re.compile(r"^\d+$")}
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
DOCKER_SWITCHES = {
    "--rm", "-it", "-ti", "-i", "-t", "-d", "--detach", "--interactive", "--tty", "--privileged", "--init",
    "--read-only", "-P", "--publish-all", "--no-healthcheck",
}
DOCKER_ENV_FLAGS = ("-e", "--env")
LAUNCHERS = {"torchrun", "deepspeed", "accelerate", "python", "sbatch"}
NOT_LAUNCHES = {
    "cd", "export", "source", ".", "echo", "printf", "set", "unset", "mkdir", "rm", "cp", "mv", "ls", "cat",
    "pip", "pip3", "conda", "module", "sleep", "wait", "git", "nvidia-smi", "ulimit", "trap", "wget", "curl",
    "true", "false", "exit", "if", "then", "fi", "else", "for", "do", "done", "tee", "grep", "head", "tail",
    "date", "hostname", "scontrol", "ray", "huggingface-cli", "chmod", "ln", "touch", "kill", "pkill",
}
TORCH_RUN_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
REDIRECT_OP = re.compile(r"^(?:\d*|&)(?:>>|>|<)")
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
    docker_index: int | None = None  # the `run`/`exec` token of `docker run`: env goes in as `-e NAME=v`
    docker_env_index: dict[str, int] = field(default_factory=dict)  # -e NAME=value tokens
    env_order: list[int] = field(default_factory=list)  # every VAR=v token in the prefix, repeats included
    node: str | None = None  # the comment above the command ("node 1"), when the script labels it
    program: str | None = None  # the first word after env and wrappers
    script_model: Script | None = field(default=None, repr=False, compare=False)  # the whole script

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


def _hard_newline(gap: str) -> bool:
    """A line break that ends a command: not a backslash continuation (comments end at the newline)."""
    return "\n" in re.sub(r"\\\r?\n", "", gap)


def split_segments(line: TokenLine) -> list[tuple[int, int]]:
    """(start, end) token ranges of the commands: split at ;, &&, ||, |, & and at line breaks
    that are not continuations (a line that starts with a flag still continues the command above)."""
    segments, start, cut = [], 0, None  # cut: where a redirection ended the command's words
    for idx, token in enumerate(line.tokens):
        if token.is_operator and REDIRECT_OP.match(token.value):
            cut = idx if cut is None else cut
        elif token.is_operator:
            segments.append((start, idx if cut is None else cut))
            start, cut = idx + 1, None
        elif idx > start and _hard_newline(line.gaps[idx]) and not token.value.startswith("-"):
            segments.append((start, idx if cut is None else cut))
            start, cut = idx, None
    segments.append((start, len(line.tokens) if cut is None else cut))
    return [(a, b) for a, b in segments if b > a]


def _choose_segment(line: TokenLine) -> tuple[int, int]:
    segments = split_segments(line) or [(0, 0)]
    for seg_start, seg_end in segments:
        words = [t.value for t in line.tokens[seg_start:seg_end] if not _ENV_ASSIGN.match(t.value)]
        if words and _looks_like_program(words[0]):
            return seg_start, seg_end
    return max(segments, key=lambda seg: seg[1] - seg[0])


@dataclass
class Script:
    """Every command of a pasted script; `launches` are those that start training."""

    line: TokenLine
    commands: list[LaunchCommand] = field(default_factory=list)
    launches: list[LaunchCommand] = field(default_factory=list)
    exports: dict[str, int] = field(default_factory=dict)  # NAME -> token of `export NAME=v` / `NAME=v`
    export_order: list[int] = field(default_factory=list)  # every such token, repeats included

    @property
    def text(self) -> str:
        return self.line.text

    @property
    def primary(self) -> LaunchCommand:
        # no launching command: an empty one, so a rewrite only reports its changes
        return self.launches[0] if self.launches else LaunchCommand(line=self.line, launcher="unknown")


_NODE_LABEL = re.compile(r"#\s*(.*\S)")


def _is_launch(cmd: LaunchCommand) -> bool:
    if cmd.program is None or os.path.basename(cmd.program) in NOT_LAUNCHES:
        return False
    return (cmd.launcher in LAUNCHERS or (cmd.script or "").endswith(".py") or cmd.script_is_module
            or bool(cmd.script_flags) or cmd.launcher == "shell")


@functools.lru_cache(maxsize=64)
def parse_script(text: str | None) -> Script:
    """Parse once: the engine, the fix builders and the estimator share this (read-only) result."""
    line = tokenize(text or "")
    script = Script(line=line)
    for start, end in split_segments(line):
        cmd = LaunchCommand(line=line, segment_start=start, segment_end=end)
        labels = _NODE_LABEL.findall(line.gaps[start]) if start < len(line.gaps) else []
        cmd.node = labels[-1][:80] if labels else None
        try:
            _parse_into(cmd)
        except Exception:  # odd input must never break a diagnosis
            cmd.launcher = "unknown"
        script.commands.append(cmd)
        first = line.tokens[start].value
        if first == "export" or (cmd.program is None and cmd.env_order):
            for index in range(start + (first == "export"), end):
                name, eq, _ = line.tokens[index].value.partition("=")
                if eq and _ENV_ASSIGN.match(line.tokens[index].value):
                    script.exports.setdefault(name, index)
                    script.export_order.append(index)
    script.launches = [c for c in script.commands if _is_launch(c)]
    if script.launches and any(c.launcher != "shell" for c in script.launches):
        script.launches = [c for c in script.launches if c.launcher != "shell"]
    candidates = [c for c in script.commands if (c.program is not None or c.script_flags)
                  and os.path.basename(c.program or "") not in NOT_LAUNCHES]
    if not script.launches and candidates:  # a fragment: the longest command that is not shell housekeeping
        script.launches = [max(candidates, key=lambda c: c.segment_end - c.segment_start)]
    for cmd in script.launches:
        cmd.script_model = script
    return script


def parse_command(text: str | None) -> LaunchCommand:
    """The first launching command of `text` (see parse_script for all of them)."""
    return parse_script(text).primary


def _parse_into(cmd: LaunchCommand) -> None:
    tokens = cmd.line.tokens
    end = cmd.segment_end
    i = cmd.segment_start
    while i < end:
        word = tokens[i].value
        base = os.path.basename(word)
        if _ENV_ASSIGN.match(word):
            name, _, env_value = word.partition("=")
            cmd.env[name], cmd.env_index[name] = env_value, i
            cmd.env_order.append(i)
            i += 1
        elif base in ("docker", "podman") and i + 1 < end and tokens[i + 1].value in ("run", "exec"):
            cmd.wrappers.append(base)
            cmd.docker_index = i + 1
            i = _read_docker(cmd, i + 2, end, tokens[i + 1].value)
        elif base == "env":
            cmd.wrappers.append("env")
            i += 1
            while i < end and tokens[i].value in ("-u", "-i", "--unset"):
                i += 2 if tokens[i].value != "-i" else 1
        elif base in WRAPPERS:
            cmd.wrappers.append(base)
            flags, i = _read_flags(cmd, i + 1, end, WRAPPER_SWITCHES, stop_at_word=True)
            cmd.wrapper_flags.extend(flags)
            argument = _WRAPPER_ARGUMENT.get(base)
            if argument is not None and i < end and argument.match(tokens[i].value) and i + 1 < end:
                i += 1
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
    cmd.program = None if _is_flag(word) else word
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


def _read_docker(cmd: LaunchCommand, i: int, end: int, verb: str) -> int:
    """Skip docker's options (recording -e NAME=value) and the image or container; return the program's index."""
    tokens = cmd.line.tokens
    while i < end and _is_flag(tokens[i].value):
        word = tokens[i].value
        name, eq, inline = word.partition("=")
        if name in DOCKER_ENV_FLAGS and not eq and i + 1 < end:
            env_name, has, env_value = tokens[i + 1].value.partition("=")
            if has:
                cmd.env[env_name], cmd.docker_env_index[env_name] = env_value, i + 1
            i += 2
        elif eq or name in DOCKER_SWITCHES:
            cmd.wrapper_flags.append(Flag(name=name, key=normalise_key(name), name_index=i, inline=bool(eq),
                                          value=inline if eq else None))
            i += 1
        else:
            cmd.wrapper_flags.append(Flag(name=name, key=normalise_key(name), name_index=i, value_index=i + 1,
                                          value=tokens[i + 1].value if i + 1 < end else None))
            i += 2
    return i + 1  # the image (run) or the container (exec)


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
