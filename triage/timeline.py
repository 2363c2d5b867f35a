"""Per-rank status and events for the timeline, bounded per rank.

Events carry the wall-clock time (epoch seconds) wherever their line has a timestamp: a rank's
first line and the launcher's exit lines are parsed for one too. Progress events name the file
they were read from (the rank's own file). The failing rank's deciding line is always one of its
events, so its lane never shows only the signal that ended it.
"""

from __future__ import annotations

from triage import timestamps
from triage.collected import Collected
from triage.decide import Verdict
from triage.diagnosis import Event, RankStatus

MAX_EVENTS = 50


def rank_statuses(
    collected: Collected, verdict: Verdict, world_size: int | None, limit_ranks: int = 4096
) -> list[RankStatus]:
    ranks = set(collected.tracks)
    launcher = collected.launcher
    for item in launcher.exits:
        rank = item.rank if item.rank is not None else item.local_rank
        if rank is not None:
            ranks.add(rank)
    if world_size and world_size <= limit_ranks:
        ranks |= set(range(world_size))
    own_errors: dict[int, list] = {}
    for hit in collected.hits:
        if hit.rank is not None and hit.rule.role in ("root",) and not hit.demoted:
            own_errors.setdefault(hit.rank, []).append(hit)
    cascade_ranks = {hit.rank for hit in collected.cascades if hit.rank is not None}
    out = []
    for rank in sorted(ranks)[:limit_ranks]:
        events = _events(collected, rank)
        if rank == verdict.failing_rank:
            _add_deciding_line(events, verdict)
        exit_item = launcher.exit_for(rank) or _exit_by_local(collected, rank)
        exit_code = exit_item.exit_code if exit_item else None
        signal = exit_item.signal if exit_item else None
        if rank == verdict.failing_rank:
            status = "failed"
        elif exit_item is not None and launcher.is_sigterm_only(rank):
            status = "terminated"
        elif rank in own_errors:
            status = "failed"
        elif rank in cascade_ranks or any(tb.rank == rank for tb in collected.tracebacks):
            status = "cascade"
        elif exit_code not in (None, 0):
            status = "failed"
        elif exit_code == 0:
            status = "ok"
        else:
            status = "unknown"
        if (
            rank == verdict.failing_rank
            and exit_code is None
            and verdict.candidate
            and verdict.candidate.facts.get("exit_code") is not None
        ):
            exit_code = verdict.candidate.facts["exit_code"]
        track = collected.tracks.get(rank)
        last_step = track.last_progress[3] if track and track.last_progress else None
        out.append(
            RankStatus(
                rank=rank,
                status=status,
                exit_code=exit_code,
                events=events,
                signal=signal,
                last_step=last_step,
            )
        )
    return out


def _exit_by_local(collected: Collected, rank: int):
    for item in collected.launcher.exits:
        if item.rank is None and item.local_rank == rank:
            return item
    return None


def _add_deciding_line(events: list[Event], verdict: Verdict) -> None:
    """The failing rank's lane shows the line the verdict rests on, even when no hit was kept for it."""
    candidate = verdict.candidate
    if candidate is None or candidate.line is None:
        return
    if candidate.rank is not None and candidate.rank != verdict.failing_rank:
        return  # a stalled rank's verdict rests on the others' timeouts: those lines are not its own
    if any(e.source == candidate.source and e.line == candidate.line for e in events):
        return
    kind = "exception" if candidate.traceback is not None else "error"
    events.append(
        Event(t=candidate.t, seq=candidate.seq, kind=kind, text=(candidate.text or "")[:300],
              source=candidate.source, line=candidate.line)
    )
    events.sort(key=lambda event: event.seq)


def _when(text: str, year: int | None) -> float | None:
    try:
        return timestamps.parse(text or "", year)
    except (ValueError, OverflowError):
        return None


def _events(collected: Collected, rank: int) -> list[Event]:
    track = collected.tracks.get(rank)
    events: list[Event] = []
    own_source = None
    if track is not None and track.first_line is not None:
        source, line, text = track.first_line
        own_source = source
        events.append(
            Event(t=_when(text, collected.year), seq=track.first_seq or 0, kind="started", text=text,
                  source=source, line=line)
        )
    if track is not None and track.first_progress is not None:
        line, text, t, step = track.first_progress
        events.append(Event(t=t, seq=line, kind="progress", text=text, source=own_source, line=line))
    if track is not None and track.last_progress is not None and track.last_progress != track.first_progress:
        line, text, t, step = track.last_progress
        events.append(Event(t=t, seq=line, kind="last_progress", text=text, source=own_source, line=line))
    hits = [hit for hit in collected.hits if hit.rank == rank]
    for hit in hits[:10]:
        kind = "warning" if hit.demoted or hit.rule.role == "hint" else "error"
        events.append(
            Event(t=hit.t, seq=hit.seq, kind=kind, text=hit.text[:300], source=hit.source, line=hit.line)
        )
    for tb in [tb for tb in collected.tracebacks if tb.rank == rank][:5]:
        events.append(
            Event(
                t=tb.t,
                seq=tb.seq,
                kind="exception",
                text=tb.exc_text[:300],
                source=tb.source,
                line=tb.exc_line,
            )
        )
    for hit in [hit for hit in collected.cascades if hit.rank == rank][:5]:
        events.append(
            Event(t=hit.t, seq=hit.seq, kind="cascade", text=hit.text[:300], source=hit.source, line=hit.line)
        )
    launcher = collected.launcher
    for item in launcher.exits:
        if item.rank == rank or (item.rank is None and item.local_rank == rank):
            kind = "sigterm" if item.exit_code == -15 or item.signal == "SIGTERM" else "exit"
            events.append(
                Event(
                    t=_when(item.text, collected.year),
                    seq=10**9 + item.line,
                    kind=kind,
                    text=item.text[:300] or f"exit code {item.exit_code}",
                    source=item.source,
                    line=item.line,
                )
            )
    events.sort(key=lambda event: event.seq)
    if len(events) > MAX_EVENTS:
        events = events[:2] + events[-(MAX_EVENTS - 2) :]
    return events
