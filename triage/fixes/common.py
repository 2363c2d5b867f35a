"""Shared pieces of the fix builders: one edit session per fix, lookups, the fix dict.

A fix dict (CONTRACT.md) plus the extra keys every builder may fill:
  "changes":      [{"where": "script"|"launcher"|"env"|"config", "flag"|"env"|"key", "old", "new"}]
                  -- present even without a command, so the fix still names the flag/env var
  "diff":         unified diff of the command (str) or None
  "notes":        [str]  numbers and caveats (e.g. "global batch kept: 8 x 4 x 8 = 4 x 8 x 8 = 256")
  "config_patch": {file name: {dotted.key: new value}}   (DeepSpeed JSON / YAML changes)
  "config":       {file name: the whole corrected config} when the config was given
  "shell":        [str]  extra commands to run first (converter, pip install, checks)
  "evidence":     the log line the fix answers, when known
  "cost":         "low" | "medium" | "high"  (run time / effort the fix adds)
"""
from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from ..commandline import LaunchCommand, Rewrite, check, job_world, normalise_key, parse_command
from .flags import FlagSupport

HF_KEYS = {
    "per_device_train_batch_size", "output_dir", "gradient_accumulation_steps", "num_train_epochs",
    "model_name_or_path", "deepspeed", "do_train", "learning_rate", "bf16", "fp16", "max_steps",
}
COST = {"low": 0, "medium": 1, "high": 2}


def parsed(ctx) -> LaunchCommand:
    return parse_command(ctx.command or "")


def is_hf_style(cmd: LaunchCommand, ctx=None) -> bool:
    """An HF Trainer-style script (TrainingArguments flags, or frames/configs of HF Trainer/TRL/LLaMA-Factory)."""
    if ctx is not None:
        return FlagSupport(cmd, getattr(ctx, "frames", None), ctx.configs, evidence_text(ctx)).hf
    return any(f.key in HF_KEYS for f in cmd.script_flags)


def config_values(ctx) -> list[tuple[str, dict]]:
    return [(name, conf) for name, conf in (ctx.configs or {}).items() if isinstance(conf, dict)]


def config_items(node, depth: int = 0):
    """Every (key, value) of a parsed config at any depth, to a depth and breadth no real config passes."""
    if depth > 12:
        return
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield key, value
            yield from config_items(value, depth + 1)
    elif isinstance(node, list | tuple):
        for item in node[:1000]:
            yield from config_items(item, depth + 1)


def nested_setting(ctx, keys: tuple[str, ...]) -> tuple[str, str, Any] | None:
    """(config name, dotted path, value) of the first of these settings found in a section of a training config
    (`data: {max_len: 320}` -> "data.max_len"), or None."""
    def walk(node, path: str, depth: int):
        if depth > 6 or not isinstance(node, Mapping):
            return None
        for key, value in list(node.items())[:500]:
            dotted = f"{path}.{key}" if path else str(key)
            if str(key) in keys and isinstance(value, int | float | str) and not isinstance(value, bool):
                return dotted, value
            found = walk(value, dotted, depth + 1)
            if found is not None:
                return found
        return None

    for name, conf in training_configs(ctx):
        found = walk(conf, "", 0)
        if found is not None:
            return name, found[0], found[1]
    return None


def script_section_setting(ctx, cmd: LaunchCommand, keys: tuple[str, ...]) -> tuple[str, str, Any] | None:
    """(config name, dotted path, value) of one of these settings directly in the config section named after
    the script the command runs (`pretrain:` for pretrain_ddp.py, `finetune:` for finetune_vit.py), where a
    team keeps one config with a section per script; None when no section is named after it."""
    stem = re.sub(r"\.py$", "", (cmd.script or "").replace("\\", "/").rsplit("/", 1)[-1]).lower()
    if not stem:
        return None
    for name, conf in training_configs(ctx):
        for section, values in list(conf.items())[:100]:
            if not isinstance(values, Mapping) or len(str(section)) < 4 or str(section).lower() not in stem:
                continue
            for key, value in values.items():
                if str(key) in keys and isinstance(value, int | float | str) and not isinstance(value, bool):
                    return name, f"{section}.{key}", value
    return None


def training_configs(ctx) -> list[tuple[str, dict]]:
    """Configs that hold training arguments (LLaMA-Factory / axolotl / TrainingArguments YAML or JSON),
    not DeepSpeed JSON, accelerate YAML or a model's config.json, whose same-named keys mean other things."""
    other = ("zero_optimization", "train_micro_batch_size_per_gpu", "distributed_type", "num_hidden_layers", "n_layer")
    return [(name, conf) for name, conf in config_values(ctx) if not any(key in conf for key in other)]


def lookup(ctx, cmd: LaunchCommand, keys: tuple[str, ...]) -> tuple[str | None, str | None]:
    """(value, where) of the first alias found in the command, then top-level config keys, then facts."""
    flag = cmd.flag(*keys)
    if flag is not None:
        return (flag.value if flag.value is not None else "True"), "command"
    wanted = {normalise_key(k) for k in keys}
    for name, conf in training_configs(ctx):
        for key, value in conf.items():
            if normalise_key(str(key)) in wanted and not isinstance(value, dict | list):
                return str(value), name
    for key in keys:
        if key in (ctx.facts or {}):
            return str(ctx.facts[key]), "facts"
    return None, None


def as_int(text: str | None) -> int | None:
    try:
        return int(float(text)) if text is not None else None
    except (TypeError, ValueError):
        return None


def job_world_size(ctx, cmd: LaunchCommand) -> tuple[int, str]:
    size, how = job_world(cmd, ctx.world_size)
    if size:
        return size, how
    accelerate = next((conf for _, conf in config_values(ctx) if "distributed_type" in conf), {})
    if as_int(str(accelerate.get("num_processes"))):
        return as_int(str(accelerate["num_processes"])), "num_processes in the accelerate config"
    if ctx.world_size:
        return int(ctx.world_size), "world size seen in the logs"
    return 1, "world size unknown: assumed 1"


def deepspeed_config(ctx, cmd: LaunchCommand) -> tuple[str | None, dict | None]:
    """The DeepSpeed JSON the job used: named by --deepspeed/--deepspeed_config/--ds_file, or any config
    that looks like one (has zero_optimization / train_batch_size)."""
    named = cmd.value("deepspeed", "deepspeed_config", "ds_file", "ds_config", "deepspeed_config_file")
    configs = config_values(ctx)
    for name, conf in configs:
        if named and (name == named or name.split("/")[-1] == named.split("/")[-1]):
            return name, conf
    for name, conf in configs:
        if "zero_optimization" in conf or "train_micro_batch_size_per_gpu" in conf or "train_batch_size" in conf:
            return name, conf
    return named, None


def zero_offloads(conf: dict | None) -> dict[str, str]:
    """The ZeRO offloads a DeepSpeed config turns on: {"offload_optimizer" / "offload_param": device}."""
    zero = (conf or {}).get("zero_optimization") if isinstance(conf, dict) else None
    if not isinstance(zero, dict):
        return {}
    places = {key: zero.get(key) for key in ("offload_optimizer", "offload_param")}
    return {key: str(place.get("device", "none")).lower() for key, place in places.items()
            if isinstance(place, dict) and str(place.get("device", "none")).lower() != "none"}


class Edits:
    """One fix's changes: to the command (through Rewrite) and to config files."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.cmd = parsed(ctx)
        self.rw = Rewrite(self.cmd)
        self.config_patch: dict[str, dict[str, Any]] = {}
        self.env: dict[str, str] = {}
        self.support = FlagSupport(self.cmd, getattr(ctx, "frames", None), ctx.configs, evidence_text(ctx))
        self.code_changes: list[dict] = []

    def set(self, keys: tuple[str, ...], value, *, where: str = "script", add: bool = True,
            in_code: str | None = None) -> bool:
        """Set a training setting where the job keeps it: the command flag, else the training-args
        config file that holds the key, else add a flag the script takes. When the script takes no such
        flag, the change is recorded for the code (`in_code` says where) and False is returned."""
        if self.cmd.flag(*keys, where=where) is None and where == "script":
            for name, conf in training_configs(self.ctx):
                key = next((k for k in conf if normalise_key(str(k)) in {normalise_key(x) for x in keys}), None)
                if key is not None:
                    self.patch_config(name, str(key), value)
                    return True
            accepted = self.support.first_accepted(keys) if add else None
            if accepted is None:
                if add:
                    change = {"where": "code", "key": keys[0], "new": value,
                              "hint": in_code or f"the script takes no --{keys[0]}: set it where the script "
                                                 f"configures it ({self.support.reason})"}
                    self.code_changes.append(change)
                    self.rw.changes.append(change)
                return False
            keys = (accepted, *[k for k in keys if k != accepted])
        return self.rw.set_flag(keys, value, where=where, add=add)

    def set_env(self, name: str, value: str) -> None:
        self.env[name] = value
        self.rw.set_env(name, value)

    def patch_config(self, name: str, dotted: str, value) -> None:
        self.config_patch.setdefault(name, {})[dotted] = value
        self.rw.changes.append({"where": "config", "file": name, "key": dotted, "new": value})

    def corrected_configs(self) -> dict[str, Any]:
        out = {}
        for name, patch in self.config_patch.items():
            conf = (self.ctx.configs or {}).get(name)
            if isinstance(conf, dict):
                out[name] = apply_patch(conf, patch)
        return out

    def fix(self, kind: str, title: str, why: str, *, notes=None, cost: str = "low", **extra) -> dict:
        command = self.rw.render() if self.ctx.command else None
        result = {
            "kind": kind, "title": title, "why": why, "command": command, "env": dict(self.env),
            "verified": None, "changes": list(self.rw.changes),
            "diff": (self.rw.diff() or None) if self.ctx.command else None,
            "notes": list(notes or []), "cost": cost,
        }
        for change in self.code_changes:
            result["notes"].append(f"change in the code or config: {change['key']} = {change['new']} "
                                   f"({change['hint']})")
        if self.config_patch:
            result["config_patch"] = self.config_patch
            corrected = self.corrected_configs()
            if corrected:
                result["config"] = corrected
        evidence = first_evidence(self.ctx)
        if evidence:
            result["evidence"] = evidence
        result.update(extra)
        verify(self.ctx, result)
        return result


def verify(ctx, fix: dict, extra_problems: list[str] | None = None) -> dict:
    """Check the corrected command (see triage.commandline.check); one that fails is not shown."""
    if not ctx.command or not fix.get("command"):
        return fix
    problems = check(ctx.command, fix["command"], fix.get("changes") or [], fix.get("diff")) + list(extra_problems or [])
    fix["check"] = {"passed": not problems, "problems": problems}
    if problems:
        fix["command"], fix["diff"] = None, None
        fix.setdefault("notes", []).append("no corrected command is shown: it failed its check ("
                                           + "; ".join(problems[:3]) + "); make the listed changes by hand")
    return fix


def apply_patch(conf: dict, patch: dict[str, Any]) -> dict:
    out = copy.deepcopy(conf)
    for dotted, value in patch.items():
        node = out
        parts = dotted.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        if value is None:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
    return out


def series_capacity_gib(ctx) -> float | None:
    """The GPU size the memory series report (nvidia-smi memory.total etc.), when no OOM message gave it."""
    memory = ctx.memory or {}
    if memory.get("oom"):
        return None
    capacities = [s.get("capacity") for s in memory.get("series") or []
                  if str(s.get("kind", "")).startswith("gpu") and isinstance(s.get("capacity"), int | float)]
    return round(max(capacities) / 1024, 2) if capacities else None


def first_evidence(ctx) -> str | None:
    for line in ctx.evidence or []:
        if line and str(line).strip():
            return str(line).strip()[:500]
    return (ctx.message or None) and str(ctx.message)[:500]


def evidence_text(ctx) -> str:
    return " ".join([str(ctx.message or ""), *[str(x) for x in ctx.evidence or []]])[:20000]


def search(pattern: str, text: str, flags=re.I):
    return re.search(pattern, text, flags)
