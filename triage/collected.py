"""What stage 1 (triage.collect) hands to stage 2 (triage.candidates, triage.decide, triage.attribution): hits, tracebacks, launcher facts, per-rank tracks."""

from __future__ import annotations

from dataclasses import dataclass, field

from triage import launchers, rules
from triage.tracebacks import Traceback


@dataclass
class Hit:
    rule: rules.Rule
    rank: int | None
    source: str
    line: int
    text: str
    seq: int
    t: float | None
    facts: dict = field(default_factory=dict)
    demoted: bool = False  # a warning line, or a line that also reads as a cascade

    @property
    def weight(self) -> float:
        return self.rule.weight * (0.3 if self.demoted else 1.0)


@dataclass
class RankTrack:
    first_seq: int | None = None
    first_line: tuple[str, int, str] | None = None
    first_progress: tuple[int, str, float | None, int | None] | None = None  # (seq, text, t, step)
    last_progress: tuple[int, str, float | None, int | None] | None = None
    progress_count: int = 0
    phase: str | None = None
    last_t: float | None = None
    events: list = field(default_factory=list)


@dataclass
class Collected:
    hits: list[Hit] = field(default_factory=list)
    cascades: list[Hit] = field(default_factory=list)
    tracebacks: list[Traceback] = field(default_factory=list)
    launcher: launchers.LauncherFacts = field(default_factory=launchers.LauncherFacts)
    tracks: dict[int, RankTrack] = field(default_factory=dict)
    prefix_styles: set[str] = field(default_factory=set)
    sources: list[str] = field(default_factory=list)
    error_files: list[dict] = field(default_factory=list)
    bare_exceptions: list[dict] = field(default_factory=list)  # exception lines outside any traceback
    fault_stacks: list = field(default_factory=list)  # faulthandler stacks (triage.faultstacks)
    unranked: RankTrack = field(default_factory=RankTrack)  # progress lines with no rank prefix
    seq: int = 0
    year: int | None = None
    lines_total: int = 0

    def track(self, rank: int | None) -> RankTrack | None:
        if rank is None or rank < 0 or rank > 1_000_000:
            return None
        if rank not in self.tracks:
            if len(self.tracks) >= 8192:
                return None
            self.tracks[rank] = RankTrack()
        return self.tracks[rank]
