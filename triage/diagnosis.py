"""The Diagnosis data classes and their JSON form (docs/diagnosis.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ENGINE_VERSION = "1.0.0"


@dataclass
class Evidence:
    source: str
    line: int | None
    text: str

    @classmethod
    def from_dict(cls, data: dict) -> Evidence:
        return cls(source=data.get("source", ""), line=data.get("line"), text=data.get("text", ""))


@dataclass
class RootCause:
    rank: int | None
    exception: str | None
    message: str | None
    frames: list[dict] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict) -> RootCause:
        return cls(
            rank=data.get("rank"),
            exception=data.get("exception"),
            message=data.get("message"),
            frames=list(data.get("frames") or []),
            evidence=[Evidence.from_dict(item) for item in data.get("evidence") or []],
        )


@dataclass
class Event:
    t: float | str | None
    seq: int
    kind: str
    text: str
    source: str | None = None
    line: int | None = None

    @classmethod
    def from_dict(cls, data: dict) -> Event:
        return cls(
            t=data.get("t"),
            seq=data.get("seq", 0),
            kind=data.get("kind", ""),
            text=data.get("text", ""),
            source=data.get("source"),
            line=data.get("line"),
        )


@dataclass
class RankStatus:
    rank: int
    status: str  # failed | terminated | cascade | ok | unknown
    exit_code: int | None = None
    events: list[Event] = field(default_factory=list)
    signal: str | None = None
    last_step: int | None = None

    @classmethod
    def from_dict(cls, data: dict) -> RankStatus:
        return cls(
            rank=data["rank"],
            status=data.get("status", "unknown"),
            exit_code=data.get("exit_code"),
            events=[Event.from_dict(item) for item in data.get("events") or []],
            signal=data.get("signal"),
            last_step=data.get("last_step"),
        )


@dataclass
class Diagnosis:
    category: str
    confidence: float
    summary: str
    launcher: str | None
    world_size: int | None
    failing_rank: int | None
    root_cause: RootCause | None
    ranks: list[RankStatus] = field(default_factory=list)
    fixes: list[dict] = field(default_factory=list)
    memory: dict = field(default_factory=lambda: {"series": [], "estimate": None})
    fingerprint: str = ""
    engine_version: str = ENGINE_VERSION
    rule_id: str | None = None
    evidence: list[Evidence] = field(default_factory=list)  # every supporting line, root first
    launcher_root_cause_rank: int | None = None
    launcher_verdict_wrong: bool = False
    launcher_verdict_reason: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        data = asdict(self)
        order = [
            "engine_version",
            "category",
            "confidence",
            "summary",
            "launcher",
            "world_size",
            "failing_rank",
            "root_cause",
            "ranks",
            "fixes",
            "memory",
            "fingerprint",
        ]
        out = {key: data[key] for key in order}
        out.update({key: value for key, value in data.items() if key not in out})
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Diagnosis:
        root = data.get("root_cause")
        return cls(
            category=data.get("category", "unknown"),
            confidence=float(data.get("confidence") or 0.0),
            summary=data.get("summary", ""),
            launcher=data.get("launcher"),
            world_size=data.get("world_size"),
            failing_rank=data.get("failing_rank"),
            root_cause=RootCause.from_dict(root) if root else None,
            ranks=[RankStatus.from_dict(item) for item in data.get("ranks") or []],
            fixes=list(data.get("fixes") or []),
            memory=data.get("memory") or {"series": [], "estimate": None},
            fingerprint=data.get("fingerprint", ""),
            engine_version=data.get("engine_version", ENGINE_VERSION),
            rule_id=data.get("rule_id"),
            evidence=[Evidence.from_dict(item) for item in data.get("evidence") or []],
            launcher_root_cause_rank=data.get("launcher_root_cause_rank"),
            launcher_verdict_wrong=bool(data.get("launcher_verdict_wrong")),
            launcher_verdict_reason=data.get("launcher_verdict_reason"),
            facts=dict(data.get("facts") or {}),
        )
