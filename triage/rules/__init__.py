"""The rule registry: one module per failure family.

A rule has an id, a category (taxonomy.md), a role and ordered fix kinds:
  root          the line can be the originating failure
  cascade       the line is a consequence of another rank's failure (never a root)
  confirmation  the line supports a root of its category (e.g. the kernel OOM killer for host_oom)
  hint          a frame or phase line that suggests a category (e.g. a traceback frame inside
                `apply_chat_template`); it counts at half weight under an exception and never outranks what
                a root rule recognises; alone in a log it is reported, at a low confidence
A rule may also say what its failure means while the traceback reads training data (`reading_data`), or,
through `within`, what it means given the traceback's frames (a missing module imported by the script's
own code is the project's own module, not a package); `within` returning False drops the hit (the line is
not that rule's failure where those frames raised it) and leaves the exception to the fallback classifier.
DEFAULT_FIXES are the fix kinds every diagnosis of a category offers after its rule's own.
When no rule matches an exception, rules/exceptions.py (the fallback classifier) names a category from
the exception's class, its message keywords and the module that raised it, at a lower weight.
`weight` says how specific the evidence is (0..1); the engine ranks candidate roots by it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

ROOT, CASCADE, CONFIRMATION, HINT = "root", "cascade", "confirmation", "hint"

# the fix kinds every diagnosis of a category offers after its rule's own (taxonomy.md's vocabulary)
DEFAULT_FIXES = {
    "data_schema": ["convert_data_format"],
    "data_corrupt": ["fix_data_file"],
    "data_pipeline": ["fix_data_file"],
    "gpu_oom": ["reduce_batch_size", "enable_gradient_checkpointing"],
    "host_oom": ["fix_config", "reduce_batch_size", "reduce_dataloader_workers"],
    "dataloader_worker": ["reduce_dataloader_workers"],
    "nccl_timeout": ["increase_timeout", "set_nccl_env"],
    "nccl_error": ["set_nccl_env"],
    "rendezvous": ["fix_rendezvous"],
    "version_mismatch": ["pin_versions"],
    "config_invalid": ["fix_config"],
    "cuda_error": ["debug_cuda"],
    "hardware": ["replace_hardware"],
    "storage": ["free_disk", "fix_path"],
    "model_load": ["fix_path"],
    "numerical": ["fix_numerics"],
    "code_bug": ["fix_code"],
    "unknown": [],
}


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    role: str
    literals: tuple[str, ...]
    pattern: re.Pattern
    fixes: tuple[str, ...] = ()
    weight: float = 0.7
    summary: str = ""
    facts: Callable[[re.Match], dict] | None = None
    ignore_case: bool = False
    sampled: bool = False  # too frequent for the prefilter (NCCL INFO): seen through the scanner's samples
    # (category, fixes) the same failure means when its traceback was reading training data, not a model
    # (an unreadable file inside a Dataset's __getitem__ is a damaged data shard, not a damaged checkpoint)
    reading_data: tuple[str, tuple[str, ...], str] | None = None  # (category, fixes, summary)
    # (line text + the exception's whole message, the traceback's frames) -> (category, fixes, summary)
    # when they change what the line means
    within: Callable[[str, list[dict]], tuple[str, tuple[str, ...], str] | bool | None] | None = None

    def match(self, text: str) -> re.Match | None:
        haystack = text.lower() if self.ignore_case else text
        if not any(literal in haystack for literal in self._literals_cased):
            return None
        return self.pattern.search(text)

    @property
    def _literals_cased(self) -> tuple[str, ...]:
        return tuple(lit.lower() for lit in self.literals) if self.ignore_case else self.literals


class _LazyPattern:
    """A regex compiled on first use: most rules never see a line with their literals, and compiling
    ~100 patterns at start-up costs more than scanning a small log."""

    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, source: str, flags: int = 0):
        self._source, self._flags, self._compiled = source, flags, None

    def _get(self) -> re.Pattern:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def search(self, *args, **kwargs):
        return self._get().search(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._get(), name)


def rule(
    id: str,
    category: str,
    role: str,
    literals,
    pattern: str,
    fixes=(),
    weight=0.7,
    summary="",
    facts=None,
    flags=0,
    sampled=False,
    reading_data=None,
    within=None,
) -> Rule:
    ignore = bool(flags & re.IGNORECASE)
    return Rule(
        id=id,
        category=category,
        role=role,
        literals=tuple(literals),
        pattern=_LazyPattern(pattern, flags),
        fixes=tuple(fixes),
        weight=weight,
        summary=summary,
        facts=facts,
        ignore_case=ignore,
        sampled=sampled,
        reading_data=(reading_data[0], tuple(reading_data[1]), reading_data[2]) if reading_data else None,
        within=within,
    )


def all_rules() -> list[Rule]:
    from triage.rules import (
        cascades,
        code,
        config,
        cuda,
        data,
        dataloader,
        hardware,
        memory,
        model_load,
        nccl,
        numerical,
        rendezvous,
        storage,
        versions,
    )

    modules = (
        data,
        memory,
        dataloader,
        nccl,
        rendezvous,
        versions,
        config,
        cuda,
        hardware,
        storage,
        model_load,
        numerical,
        code,
        cascades,
    )
    return [item for module in modules for item in module.RULES]


RULES: list[Rule] = []


def registry() -> list[Rule]:
    if not RULES:
        RULES.extend(all_rules())
    return RULES


_DISPATCH: list = []


def _longest_trie(words: set[str]) -> str:
    """A regex for any of the words that returns the LONGEST one starting at a position."""
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def build(node: dict) -> str:
        children = [re.escape(char) + build(child) for char, child in sorted(node.items()) if char]
        if not children:
            return ""
        body = children[0] if len(children) == 1 else "(?:" + "|".join(children) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


def _dispatch_table():
    if not _DISPATCH:
        owners: dict[str, set[int]] = {}
        by_id = {}
        for item in registry():
            by_id[id(item)] = item
            for literal in item.literals:
                owners.setdefault(literal.lower() if item.ignore_case else literal, set()).add(id(item))
        # a literal that is found implies every literal inside it is present too
        closure = {
            literal: set().union(*(owners[other] for other in owners if other in literal))
            for literal in owners
        }
        finder = re.compile("(?=(" + _longest_trie(set(owners)) + "))")
        order = {id(item): index for index, item in enumerate(registry())}
        needs_lower = any(item.ignore_case for item in registry())
        _DISPATCH.append((finder, closure, by_id, order, needs_lower))
    return _DISPATCH[0]


def matching(text: str) -> list[tuple[Rule, re.Match]]:
    """Every rule that matches the line: one C-level literal scan picks the few rules whose regex runs."""
    finder, closure, by_id, order, needs_lower = _dispatch_table()
    found = set(finder.findall(text))
    if needs_lower:
        found |= set(finder.findall(text.lower()))
    found.discard("")
    if not found:
        return []
    chosen: set[int] = set()
    for literal in found:
        chosen |= closure.get(literal, set())
    out = []
    for key in sorted(chosen, key=order.__getitem__):
        item = by_id[key]
        match = item.pattern.search(text)
        if match is not None:
            out.append((item, match))
    return out


def literals() -> list[str]:
    """The byte prefilter's literals (rules marked sampled are found by the scanner's sampler instead)."""
    out: list[str] = []
    for item in registry():
        if item.sampled:
            continue
        if item.ignore_case:
            # the byte prefilter is case-sensitive: add the common spellings
            for literal in item.literals:
                out.extend({literal, literal.lower(), literal.upper(), literal.capitalize(), literal.title()})
        else:
            out.extend(item.literals)
    return out


def group(name: str) -> Callable[[re.Match], dict]:
    return lambda match: {name: match.group(1)} if match.group(1) else {}
