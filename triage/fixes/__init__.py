"""Fix builders: turn fix kinds chosen by the rules into concrete, pasteable fixes.

Contract used by triage.diagnosis (helper-owned; see build_fixes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FixContext:
    """Everything a fix builder may look at. All fields optional except category."""

    category: str
    command: str | None = None  # the failed job's launch command, as the user wrote it
    configs: dict[str, Any] = field(default_factory=dict)  # file name -> parsed JSON/YAML
    exception: str | None = None  # short class name of the root exception
    message: str | None = None  # root exception message
    evidence: list[str] = field(default_factory=list)  # evidence line texts
    rule_id: str | None = None
    world_size: int | None = None
    memory: dict | None = None  # {"series": [...], "oom": {...} or None}
    data_sample: Any = None  # parsed data sample (list/dict) or None
    facts: dict[str, Any] = field(default_factory=dict)  # extra facts a rule extracted


def build_fixes(kinds: list[str], ctx: FixContext) -> list[dict]:
    """Return CONTRACT fix dicts, in order, one or more per kind.

    Each: {"kind", "title", "why", "command", "env", "verified", ...extra keys allowed}
    """
    return [
        {"kind": kind, "title": kind.replace("_", " "), "why": "", "command": None, "env": {}, "verified": None}
        for kind in kinds
    ]
