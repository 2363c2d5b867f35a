"""Rewrite a parsed launch command, touching only the tokens that change.

    rw = Rewrite(parse_command(text))
    rw.set_flag(("per_device_train_batch_size",), 4)
    rw.set_env("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    rw.render()   # the whole command, same order, quoting and continuations
    rw.changes    # [{"where": "script", "flag": "--per_device_train_batch_size", "old": "8", "new": "4"}]

Every command of a multi-node script (`# node 0` / `# node 1`, `&&`, `;`) changes the same way;
a change is reported once, with "nodes": N when it touched N commands. An environment
variable is set where the script already sets it (`export NAME=`, a `NAME=` prefix, docker's
`-e NAME=`), else right before each command (`docker run -e NAME=v` inside a container);
never twice.

A flag that is missing is appended after the last script token in the command's own
style: the separator the previous flag used (e.g. ` \\` + newline + indent), `--a b` or
`--a=b`, `snake_case` or `kebab-case`, and `True`/`true`/bare switches.
"""
from __future__ import annotations

import difflib
from collections import defaultdict

from .parse import LAUNCHER_SWITCHES, Flag, LaunchCommand, Script, normalise_key
from .tokens import quote_like


def _bool_text(value: bool, style: str) -> str:
    text = "True" if value else "False"
    return text.lower() if style == "true" else text


class Rewrite:
    def __init__(self, target: LaunchCommand | Script) -> None:
        script = target if isinstance(target, Script) else target.script_model
        self.script = script
        self.commands = list(script.launches) if script is not None and script.launches else [target]
        self.cmd = self.commands[0]
        self.replaced: dict[int, str] = {}
        self.before: dict[int, str] = defaultdict(str)
        self.after: dict[int, str] = defaultdict(str)
        self.deleted: set[int] = set()
        self.changes: list[dict] = []

    # ---- style of the command as written -------------------------------------------------
    def _flags(self, where: str) -> list[Flag]:
        return self.cmd.launcher_flags if where == "launcher" else self.cmd.script_flags

    def bool_style(self) -> str:
        votes = {"True": 0, "true": 0, "bare": 0}
        for f in self.cmd.script_flags:
            if f.value in ("True", "False"):
                votes["True"] += 1
            elif f.value in ("true", "false"):
                votes["true"] += 1
            elif f.value is None and f.name.startswith("--"):
                votes["bare"] += 1
        best = max(votes.values())
        return "True" if votes["True"] == best else ("true" if votes["true"] == best else "bare")

    def _spell(self, key: str, where: str) -> tuple[str, bool]:
        flags = [f for f in self._flags(where) if f.name.startswith("--")]
        dashed = sum("-" in f.name[2:] for f in flags) > sum("_" in f.name[2:] for f in flags)
        inline = sum(f.inline for f in flags) > len(flags) / 2 if flags else False
        name = "--" + (key.replace("_", "-") if dashed else key)
        return name, inline

    def _separator(self, where: str) -> str:
        flags = self._flags(where)
        if flags and flags[-1].name_index > 0:
            gap = self.cmd.line.gaps[flags[-1].name_index]
            return gap if gap.strip(" \t") in ("\\\n", "\\\r\n", "") and gap else " "
        return " "

    # ---- edits: each applies to every launching command, reported once ------------------
    def _each(self, method, *args, **kwargs) -> bool:
        """Apply `method` to every launching command; keep the first change report, count the nodes."""
        first_cmd, before, count, kept = self.cmd, len(self.changes), 0, False
        for cmd in self.commands:
            self.cmd = cmd
            mark = len(self.changes)
            count += bool(method(*args, **kwargs))
            if not kept and len(self.changes) > mark:
                kept = True
            else:
                del self.changes[mark:]
        self.cmd = first_cmd
        if count > 1:
            for change in self.changes[before:]:
                change["nodes"] = count
        return count > 0

    def set_flag(self, keys, value, *, where: str = "script", add: bool = True) -> bool:
        return self._each(self._set_flag, keys, value, where=where, add=add)

    def rename_flag(self, old_keys, new_name: str) -> bool:
        return self._each(self._rename_flag, old_keys, new_name)

    def remove_flag(self, keys, *, where: str = "script") -> bool:
        return self._each(self._remove_flag, keys, where=where)

    def _set_flag(self, keys: tuple[str, ...] | str, value, *, where: str = "script", add: bool = True) -> bool:
        """Set the first present alias in `keys` to `value` (bool = switch); add keys[0] if absent."""
        keys = (keys,) if isinstance(keys, str) else keys
        flag = self.cmd.flag(*keys, where=where)
        tokens = self.cmd.line.tokens
        if flag is None:
            if not add:
                return False
            self._add_flag(keys[0], value, where)
            return True
        if isinstance(value, bool):
            if flag.value is None:
                if value:
                    return False
                self.deleted.add(flag.name_index)
                self.changes.append({"where": where, "flag": flag.name, "old": "(set)", "new": "(removed)"})
                return True
            text = _bool_text(value, "true" if flag.value.islower() else "True")
        else:
            text = str(value)
        if flag.value == text:
            return False
        if flag.inline:
            raw_value = tokens[flag.name_index].raw.partition("=")[2]
            raw_name = tokens[flag.name_index].raw.partition("=")[0]
            self.replaced[flag.name_index] = f"{raw_name}={quote_like(raw_value, text)}"
        elif flag.value_index is not None:
            self.replaced[flag.value_index] = quote_like(tokens[flag.value_index].raw, text)
        else:
            self.after[flag.name_index] += " " + quote_like(None, text)
        self.changes.append({"where": where, "flag": flag.name, "old": flag.value, "new": text})
        return True

    def key_value_style(self) -> bool:
        """Hydra/OmegaConf-style `key=value` arguments (mmf_run, llamafactory-cli train x.yaml k=v)."""
        flags = self.cmd.script_flags
        if flags:
            return all(not f.name.startswith("-") for f in flags)
        return self.cmd.launcher == "llamafactory-cli"

    def _add_flag(self, key: str, value, where: str) -> None:
        name, inline = self._spell(normalise_key(key), where)
        switch = where == "launcher" and normalise_key(key) in LAUNCHER_SWITCHES.get(self.cmd.launcher, ())
        if isinstance(value, bool) or (switch and str(value).lower() == "true"):
            style = "bare" if switch else self.bool_style()  # a launcher switch takes no value (--use_fsdp)
            text = None if (style == "bare" and value) else _bool_text(bool(value), style)
        else:
            text = str(value)
        if where == "script" and self.key_value_style():
            name, inline, text = normalise_key(key), True, text if text is not None else "true"
        piece = name if text is None else (f"{name}={quote_like(None, text)}" if inline else f"{name} {quote_like(None, text)}")
        if not self.cmd.line.tokens or self.cmd.segment_end <= self.cmd.segment_start:
            pass  # no command: the change is only reported
        elif where == "launcher" and self.cmd.script_index is not None:
            self.before[self.cmd.script_index] += piece + " "
        else:
            anchor = max(self.cmd.segment_end - 1, 0)
            self.after[anchor] += self._separator(where) + piece
        self.changes.append({"where": where, "flag": name, "old": None, "new": text if text is not None else "(set)"})

    def _rename_flag(self, old_keys: tuple[str, ...] | str, new_name: str) -> bool:
        old_keys = (old_keys,) if isinstance(old_keys, str) else old_keys
        changed = False
        for flag in [f for f in self.cmd.script_flags if f.key in {normalise_key(k) for k in old_keys}]:
            raw = self.cmd.line.tokens[flag.name_index].raw
            self.replaced[flag.name_index] = new_name + raw[len(flag.name):] if raw.startswith(flag.name) else new_name
            self.changes.append({"where": "script", "flag": flag.name, "old": flag.name, "new": new_name})
            changed = True
        return changed

    def _remove_flag(self, keys: tuple[str, ...] | str, *, where: str = "script") -> bool:
        keys = (keys,) if isinstance(keys, str) else keys
        flag = self.cmd.flag(*keys, where=where)
        if flag is None:
            return False
        self.deleted.add(flag.name_index)
        if flag.value_index is not None:
            self.deleted.add(flag.value_index)
        self.changes.append({"where": where, "flag": flag.name, "old": flag.value or "(set)", "new": "(removed)"})
        return True

    def set_env(self, name: str, value: str) -> bool:
        """Set NAME where the script sets it already, else right before every launching command."""
        tokens = self.cmd.line.tokens
        old = next((c.env[name] for c in self.commands if name in c.env), None)
        exported = self.script.exports.get(name) if self.script is not None else None
        if exported is not None and exported < self.cmd.segment_start and not any(
                name in c.env for c in self.commands):
            old = tokens[exported].value.partition("=")[2]
        if old == value and all(name in c.env or exported is not None for c in self.commands):
            return False
        touched = False
        if exported is not None and exported < self.cmd.segment_start:
            self.replaced[exported] = self._assignment(tokens[exported].raw, name, value)
            touched = True
        for cmd in self.commands:
            if name in cmd.docker_env_index:
                index = cmd.docker_env_index[name]
                self.replaced[index] = self._assignment(tokens[index].raw, name, value)
            elif name in cmd.env_index:
                index = cmd.env_index[name]
                self.replaced[index] = self._assignment(tokens[index].raw, name, value)
            elif exported is not None and exported < cmd.segment_start:
                continue  # the export above already reaches this command
            elif cmd.docker_index is not None:  # inside the container, not on the host
                self.after[cmd.docker_index] += f" -e {name}={quote_like(None, value)}"
            elif tokens and cmd.segment_end > cmd.segment_start and cmd.program is not None:
                self.before[cmd.segment_start] += f"{name}={quote_like(None, value)} "
            touched = True
        if touched or not tokens or self.cmd.segment_end <= self.cmd.segment_start or self.cmd.program is None:
            change = {"where": "env", "env": name, "old": old, "new": value}
            if len(self.commands) > 1:
                change["nodes"] = len(self.commands)
            self.changes.append(change)
        return touched

    @staticmethod
    def _assignment(raw: str, name: str, value: str) -> str:
        old_raw = raw.partition("=")[2]
        return f"{raw.partition('=')[0]}={quote_like(old_raw, value)}" if raw.startswith(name) else \
            f"{name}={quote_like(old_raw, value)}"

    # ---- output --------------------------------------------------------------------------
    def render(self) -> str:
        line = self.cmd.line
        parts = []
        for index, token in enumerate(line.tokens):
            if index in self.deleted:
                parts.append(line.gaps[index] if index == 0 else "")
                continue
            parts.append(line.gaps[index])
            parts.append(self.before.get(index, ""))
            parts.append(self.replaced.get(index, token.raw))
            parts.append(self.after.get(index, ""))
        parts.append(line.gaps[-1] if line.gaps else "")
        return "".join(parts)

    def diff(self) -> str:
        return unified_diff(self.cmd.text, self.render())


def unified_diff(old: str, new: str) -> str:
    """A unified diff of two texts, line by line; a missing final newline never glues two lines."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), "command", "command (fixed)", n=1, lineterm="")
    return "\n".join(lines) + "\n" if old != new else ""
