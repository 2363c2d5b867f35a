"""Rewrite a parsed launch command, touching only the tokens that change.

    rw = Rewrite(parse_command(text))
    rw.set_flag(("per_device_train_batch_size",), 4)
    rw.set_env("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    rw.render()   # the whole command, same order, quoting and continuations
    rw.changes    # [{"where": "script", "flag": "--per_device_train_batch_size", "old": "8", "new": "4"}]

A flag that is missing is appended after the last script token in the command's own
style: the separator the previous flag used (e.g. ` \\` + newline + indent), `--a b` or
`--a=b`, `snake_case` or `kebab-case`, and `True`/`true`/bare switches.
"""
from __future__ import annotations

import difflib
from collections import defaultdict

from .parse import Flag, LaunchCommand, normalise_key
from .tokens import quote_like


def _bool_text(value: bool, style: str) -> str:
    text = "True" if value else "False"
    return text.lower() if style == "true" else text


class Rewrite:
    def __init__(self, cmd: LaunchCommand) -> None:
        self.cmd = cmd
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

    # ---- edits ---------------------------------------------------------------------------
    def set_flag(self, keys: tuple[str, ...] | str, value, *, where: str = "script", add: bool = True) -> bool:
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
        if isinstance(value, bool):
            style = self.bool_style()
            text = None if (style == "bare" and value) else _bool_text(value, style)
        else:
            text = str(value)
        if where == "script" and self.key_value_style():
            name, inline, text = normalise_key(key), True, text if text is not None else "true"
        piece = name if text is None else (f"{name}={quote_like(None, text)}" if inline else f"{name} {quote_like(None, text)}")
        if not self.cmd.line.tokens:
            pass  # no command: the change is only reported
        elif where == "launcher" and self.cmd.script_index is not None:
            self.before[self.cmd.script_index] += piece + " "
        else:
            anchor = max(self.cmd.segment_end - 1, 0)
            self.after[anchor] += self._separator(where) + piece
        self.changes.append({"where": where, "flag": name, "old": None, "new": text if text is not None else "(set)"})

    def rename_flag(self, old_keys: tuple[str, ...] | str, new_name: str) -> bool:
        old_keys = (old_keys,) if isinstance(old_keys, str) else old_keys
        changed = False
        for flag in [f for f in self.cmd.script_flags if f.key in {normalise_key(k) for k in old_keys}]:
            raw = self.cmd.line.tokens[flag.name_index].raw
            self.replaced[flag.name_index] = new_name + raw[len(flag.name):] if raw.startswith(flag.name) else new_name
            self.changes.append({"where": "script", "flag": flag.name, "old": flag.name, "new": new_name})
            changed = True
        return changed

    def remove_flag(self, keys: tuple[str, ...] | str, *, where: str = "script") -> bool:
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
        tokens = self.cmd.line.tokens
        if name in self.cmd.env_index:
            index = self.cmd.env_index[name]
            if self.cmd.env[name] == value:
                return False
            old_raw = tokens[index].raw.partition("=")[2]
            self.replaced[index] = f"{name}={quote_like(old_raw, value)}"
        elif tokens:
            self.before[self.cmd.segment_start] += f"{name}={quote_like(None, value)} "
        self.changes.append({"where": "env", "env": name, "old": self.cmd.env.get(name), "new": value})
        return True

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
        old, new = self.cmd.text, self.render()
        return "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True), "command", "command (fixed)", n=1
            )
        )
