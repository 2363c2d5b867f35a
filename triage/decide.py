"""Stage 2: from what was collected, choose the root cause, its category and the first failing rank."""

from __future__ import annotations

from dataclasses import dataclass, field

from triage.collected import Collected, Hit
from triage.ranks import mentioned_rank
from triage.rules import CONFIRMATION, HINT, exceptions
from triage.tracebacks import Traceback, parse_bare_exception

SIGKILL_WEIGHT = 0.55
_WRAPPERS = {"ChildFailedError", "CalledProcessError", "KeyboardInterrupt", "SystemExit"}


@dataclass
class Candidate:
    category: str
    weight: float
    fixes: list[str]
    rule_id: str
    summary: str
    rank: int | None
    source: str | None
    line: int | None
    text: str
    seq: int
    t: float | None
    facts: dict = field(default_factory=dict)
    traceback: Traceback | None = None
    hit: Hit | None = None
    confirmations: list[Hit] = field(default_factory=list)


@dataclass
class Verdict:
    candidate: Candidate | None
    failing_rank: int | None
    root_traceback: Traceback | None
    exception: str | None
    message: str | None
    reason: str = ""
    others: list[Candidate] = field(default_factory=list)


def _traceback_index(collected: Collected) -> dict[tuple[str, int], Traceback]:
    return {(tb.source, tb.exc_line): tb for tb in collected.tracebacks if tb.exc_line is not None}


def _frame_index(collected: Collected) -> dict[tuple[str, int], Traceback]:
    index = {}
    for tb in collected.tracebacks:
        for frame in tb.frames:
            index[(tb.source, frame.get("log_line"))] = tb
    return index


def candidates(collected: Collected) -> list[Candidate]:
    by_exc_line = _traceback_index(collected)
    by_frame = _frame_index(collected)
    out: list[Candidate] = []
    claimed: set[int] = set()
    confirmations = [hit for hit in collected.hits if hit.rule.role == CONFIRMATION]
    for hit in collected.hits:
        tb = by_exc_line.get((hit.source, hit.line))
        weight = hit.weight
        if tb is not None:
            claimed.add(id(tb))
            weight += 0.05
        elif hit.rule.role == HINT:
            tb = by_frame.get((hit.source, hit.line))
            if tb is not None and tb.exception is not None:
                # a frame hint never outranks what the exception line itself says
                weight *= 0.5
        out.append(
            Candidate(
                hit.rule.category,
                weight,
                list(hit.rule.fixes),
                hit.rule.id,
                hit.rule.summary,
                hit.rank,
                hit.source,
                hit.line,
                hit.text,
                hit.seq,
                hit.t,
                dict(hit.facts),
                tb,
                hit,
            )
        )
    for tb in collected.tracebacks:
        if id(tb) in claimed or tb.exception is None:
            continue
        # the exception line may have matched a rule through a continuation line; look at the message too
        guess = exceptions.explain(tb.exception, tb.message, tb.frames, tb.full_name)
        if guess is None:
            continue
        category, fixes, weight, basis = guess
        out.append(
            Candidate(
                category,
                weight,
                fixes,
                f"exception.{tb.exception}",
                "",
                tb.rank if tb.rank is not None else mentioned_rank(tb.exc_text),
                tb.source,
                tb.exc_line,
                tb.exc_text,
                tb.seq,
                tb.t,
                {"classified_by": basis},
                tb,
            )
        )
    out.extend(_bare_candidates(collected, {(hit.source, hit.line) for hit in collected.hits}))
    out.extend(_signal_candidates(collected))
    handled = _handled_tracebacks(collected)
    for candidate in out:
        if candidate.traceback is not None and id(candidate.traceback) in handled:
            # the process printed this exception and went on to fail differently later: it was caught
            candidate.weight *= 0.3
    _demote_wrappers(out)
    for candidate in out:
        same = [
            hit
            for hit in confirmations
            if hit.rule.category == candidate.category and hit is not candidate.hit
        ]
        if same:
            candidate.confirmations = same[:5]
            candidate.weight += 0.15
    return out


BARE_FACTOR = 0.8  # an exception line printed without its traceback says less than a whole traceback


def bare_traceback(item: dict) -> Traceback:
    """An exception line printed without a traceback, as a traceback with no frames."""
    return Traceback(
        item["source"],
        item["rank"],
        item["line"],
        exception=item["exception"],
        full_name=item.get("full_name") or item["exception"],
        message=item["message"],
        exc_line=item["line"],
        exc_text=item["text"],
        seq=item["seq"],
        t=item["t"],
    )


def _bare_candidates(collected: Collected, hit_lines: set) -> list[Candidate]:
    """Exception lines with no traceback around them (`[rank3]: RuntimeError: ...` alone) that no rule
    matched: the fallback classifier names a category from the class and the message."""
    out = []
    cascade_lines = {(hit.source, hit.line) for hit in collected.cascades}
    for item in collected.bare_exceptions:
        key = (item["source"], item["line"])
        if key in hit_lines or key in cascade_lines or item["exception"] in _WRAPPERS:
            continue
        guess = exceptions.explain(item["exception"], item["message"], [], item.get("full_name"))
        if guess is None:
            continue
        category, fixes, weight, basis = guess
        tb = bare_traceback(item)
        out.append(
            Candidate(
                category, weight * BARE_FACTOR, fixes, f"exception.{item['exception']}", "",
                item["rank"] if item["rank"] is not None else mentioned_rank(item["text"]),
                item["source"], item["line"], item["text"], item["seq"], item["t"], {"classified_by": basis}, tb,
            )
        )
    return out


WRAPPER_FACTOR = 0.5  # an exception raised "from" a recognised cause reports it again, in more general words
STRONG_CAUSE = 0.7


def _demote_wrappers(out: list[Candidate]) -> None:
    """`raise DatasetGenerationError(...) from e`: the chain's earlier exception is the cause. When a
    specific rule recognised that earlier exception, a candidate on a later link of the same chain is
    the wrapper's restatement and yields to it (a weak, generic origin such as a bare KeyError does not
    hold the outer, more informative exception back)."""
    by_tb = {}
    for candidate in out:
        if candidate.traceback is not None and candidate.hit is not None:
            by_tb.setdefault(id(candidate.traceback), []).append(candidate)
    for candidate in out:
        tb = candidate.traceback
        if tb is None:
            continue
        link, hops = tb, 0
        while link.previous is not None and link.chained_to_previous and hops < 20:
            link, hops = link.previous, hops + 1
            causes = by_tb.get(id(link), [])
            if any(cause.weight >= STRONG_CAUSE and cause.category != candidate.category for cause in causes):
                candidate.weight *= WRAPPER_FACTOR
                break


_HANDLED_PROBES = {
    "ImportError",
    "ModuleNotFoundError",
    "OSError",
    "ConnectionError",
    "HTTPError",
    "Timeout",
    "ReadTimeout",
    "ConnectTimeout",
    "MaxRetryError",
    "LocalEntryNotFoundError",
    "JSONDecodeError",
    "FileNotFoundError",
}


def _handled_tracebacks(collected: Collected) -> set[int]:
    """Tracebacks that a process printed and survived: an uncaught exception ends the process, so one
    followed in the same stream (same source and rank) by a different, unrelated traceback was caught
    and logged (optional-import probes, hub retries). Kept to exception kinds scripts commonly catch."""
    cascade_lines = {(hit.source, hit.line) for hit in collected.cascades}
    streams: dict[tuple, list[Traceback]] = {}
    for tb in collected.tracebacks:
        if tb.exception:
            streams.setdefault((tb.source, tb.rank), []).append(tb)
    out: set[int] = set()
    for items in streams.values():
        for index, tb in enumerate(items[:-1]):
            if tb.exception not in _HANDLED_PROBES:
                continue
            for later in items[index + 1 :]:
                chained = later.chained_to_previous and _origin(later) is _origin(tb)
                if (
                    not chained
                    and later.exception != tb.exception
                    and later.exception not in _WRAPPERS
                    and later.exception not in exceptions.CASCADE_EXCEPTIONS
                    and (later.source, later.exc_line) not in cascade_lines
                ):
                    out.add(id(tb))
                    break
    return out


def _signal_candidates(collected: Collected) -> list[Candidate]:
    """A rank killed by SIGKILL (-9) with no exception of its own: the host OOM killer's signature."""
    out = []
    facts = collected.launcher
    for item in facts.exits:
        if item.exit_code == -7 or item.signal == "SIGBUS":
            rank = item.rank if item.rank is not None else item.local_rank
            out.append(
                Candidate(
                    "dataloader_worker",
                    0.45,
                    ["increase_shm", "reduce_dataloader_workers"],
                    "launcher.sigbus",
                    "the process died of SIGBUS, most often shared memory (/dev/shm) "
                    "running out under DataLoader workers",
                    rank,
                    item.source,
                    item.line,
                    item.text,
                    10**9,
                    None,
                    {"exit_code": item.exit_code, "signal": "SIGBUS"},
                )
            )
        if item.exit_code in (-9, 137) or item.signal == "SIGKILL":
            rank = item.rank if item.rank is not None else item.local_rank
            out.append(
                Candidate(
                    "host_oom",
                    SIGKILL_WEIGHT,
                    ["fix_config", "reduce_batch_size", "reduce_dataloader_workers"],
                    "launcher.sigkill",
                    "the process was killed with SIGKILL (exit -9) and left no "
                    "traceback, the signature of the host's out-of-memory killer",
                    rank,
                    item.source,
                    item.line,
                    item.text,
                    10**9,
                    None,
                    {"exit_code": item.exit_code, "signal": "SIGKILL"},
                )
            )
    return out


def _order(candidate: Candidate):
    return (
        -round(candidate.weight, 3),
        candidate.t if candidate.t is not None else float("inf"),
        candidate.seq,
    )


def decide(collected: Collected, world_size: int | None) -> Verdict:
    pool = [item for item in candidates(collected) if item.weight >= 0.1]
    if any(tb.exception and tb.exception not in _WRAPPERS for tb in collected.tracebacks):
        # "the launcher killed its workers" only suggests a silent death when no worker raised anything
        pool = [item for item in pool if item.rule_id != "memory.launcher_killing"]
    if any(item.exit_code not in (None, 0, 1, -9, 137, -15) for item in collected.launcher.exits):
        # a worker that died of another signal (SIGSEGV -11, SIGABRT -6) is no out-of-memory kill
        pool = [item for item in pool if item.rule_id != "memory.launcher_killing"]
    if not pool:
        raised = [tb for tb in collected.tracebacks if tb.exception and tb.exception not in _WRAPPERS]
        cascade_lines = {(hit.source, hit.line) for hit in collected.cascades}
        raised = [tb for tb in raised if (tb.source, tb.exc_line) not in cascade_lines]
        if not raised:
            # exception lines printed without a traceback still name what was raised
            raised = [
                bare_traceback(item)
                for item in collected.bare_exceptions
                if item["exception"] not in _WRAPPERS
                and item["exception"] not in exceptions.CASCADE_EXCEPTIONS
                and (item["source"], item["line"]) not in cascade_lines
            ]
        if raised:
            # no known signature, but a rank raised something of its own: report it as it is
            origin = _origin(raised[0])
            rank = raised[0].rank if raised[0].rank is not None else _rank_without_verdict(collected)
            return Verdict(
                None, rank, origin, origin.exception, origin.message, "the rank that raised the exception"
            )
        return Verdict(None, _rank_without_verdict(collected), None, None, None, "no failure signature found")
    pool.sort(key=_order)
    winner = pool[0]
    if winner.category == "nccl_timeout":
        cause = _exception_behind_timeout(collected, pool)
        if cause is not None:
            winner = cause
    # prefer the earliest instance of the winning signature: the first rank that hit it
    same = [item for item in pool if item.rule_id == winner.rule_id and item.weight >= winner.weight - 0.06]
    same.sort(key=lambda item: (item.t if item.t is not None else float("inf"), item.seq))
    winner = same[0]
    if winner.traceback is None and parse_bare_exception(winner.text) is None:
        # the same signature raised as an exception on the same rank says more (class, message, frames)
        for other in same[1:]:
            if other.rank == winner.rank and (
                other.traceback is not None or parse_bare_exception(other.text)
            ):
                winner = other
                break
    for other in same[1:]:
        # a wrapped line: the same signature on the next lines carries the rest of the facts
        if (
            other.source == winner.source
            and other.line is not None
            and winner.line is not None
            and 0 < other.line - winner.line <= 3
        ):
            for key, value in other.facts.items():
                winner.facts.setdefault(key, value)
    failing_rank, reason = first_failing_rank(collected, winner, pool, world_size)
    if winner.traceback is None and parse_bare_exception(winner.text) is None:
        near_tb, near_bare = _nearby_exception(collected, winner)
        if near_tb is not None:
            winner.traceback = near_tb
        elif near_bare is not None:
            winner.facts.setdefault("exception", near_bare["exception"])
            winner.facts.setdefault("message", near_bare["message"])
        else:
            winner.traceback = _surfacing_exception(collected, winner, pool)
    else:
        for item in collected.bare_exceptions:
            if item["source"] == winner.source and item["line"] == winner.line:
                winner.facts.setdefault("exception", item["exception"])
                winner.facts.setdefault("message", item["message"])
                break
    if (
        winner.traceback is None
        and winner.category == "hardware"
        and failing_rank is not None
        and parse_bare_exception(winner.text) is None
        and not winner.facts.get("exception")
    ):
        winner.traceback = _device_error_of(collected, failing_rank)
    root_tb = _origin(winner.traceback) if winner.traceback is not None else None
    exception, message = _exception(winner, root_tb)
    matched = winner.traceback
    if root_tb is not None and matched is not None and matched is not root_tb and matched.exception:
        # keep the chain readable: the origin first, then what the matching exception said about it
        message = f"{message} (then {matched.exception}: {matched.message})"
    return Verdict(winner, failing_rank, root_tb, exception, message, reason, pool[1:6])


_FALLBACK_PAIRS = {("ArrowInvalid", "JSONDecodeError"), ("ArrowTypeError", "JSONDecodeError")}


def _device_error_of(collected: Collected, rank: int) -> Traceback | None:
    """A kernel/driver line (Xid, ECC) names the fault; the failing rank's own CUDA error is how it surfaced."""
    for tb in reversed(collected.tracebacks):
        if (
            tb.rank == rank
            and tb.exception
            and tb.exception not in _WRAPPERS
            and ("CUDA" in tb.message or "NCCL" in tb.message or "cuda" in tb.message)
        ):
            return tb
    return None


def _origin(tb: Traceback) -> Traceback:
    seen = 0
    while tb.previous is not None and tb.chained_to_previous and seen < 20:
        if (tb.exception, tb.previous.exception) in _FALLBACK_PAIRS:
            break  # datasets reads JSON with pyarrow first; the json module is only its fallback
        tb = tb.previous
        seen += 1
    return tb


def _exception(winner: Candidate, root_tb: Traceback | None) -> tuple[str | None, str | None]:
    if winner.facts.get("exception"):
        return winner.facts["exception"], winner.facts.get("message") or winner.text
    if root_tb is not None and root_tb.exception:
        return root_tb.exception, root_tb.message
    if root_tb is not None and root_tb.exception and winner.rule_id.startswith("exception."):
        return root_tb.exception, root_tb.message
    parsed = parse_bare_exception(winner.text)
    if parsed is not None and not winner.rule_id.startswith("launcher."):
        return parsed[0], parsed[2]
    if root_tb is not None and root_tb.exception:
        return root_tb.exception, root_tb.message
    if winner.rule_id.startswith("launcher.") and winner.facts.get("exit_code") is not None:
        return None, f"exit code {winner.facts['exit_code']} ({winner.facts.get('signal')}): {winner.text}"
    return None, winner.text


def _surfacing_exception(collected: Collected, winner: Candidate, pool: list[Candidate]) -> Traceback | None:
    """The Python exception that surfaces a root line printed just before it (a kernel assertion, a
    DataLoader worker's bus error): same file, same rank (or an unprefixed root line), within a
    screenful after it, and itself recognised as the same kind of failure."""
    if winner.source is None or winner.line is None or winner.rule_id.startswith("launcher."):
        return None
    same_kind = set()
    for item in pool:
        if item.category == winner.category:
            same_kind.add((item.source, item.line))
            if item.traceback is not None:
                same_kind.add((item.traceback.source, item.traceback.exc_line))
    following = [
        tb
        for tb in collected.tracebacks
        if tb.source == winner.source
        and tb.exc_line is not None
        and 0 < tb.exc_line - winner.line <= 60
        and (winner.rank is None or tb.rank == winner.rank)
        and tb.exception
        and tb.exception not in _WRAPPERS
        and (tb.source, tb.exc_line) in same_kind
    ]
    return min(following, key=lambda tb: tb.exc_line, default=None)


def _nearby_exception(collected: Collected, winner: Candidate) -> tuple[Traceback | None, dict | None]:
    """The exception line a few lines above a root line that continues its message ("Last error: ...")."""
    if winner.source is None or winner.line is None or winner.rule_id.startswith("launcher."):
        return None, None
    best_tb = None
    for tb in collected.tracebacks:
        if (
            tb.source == winner.source
            and tb.exc_line is not None
            and 0 < winner.line - tb.exc_line <= 8
            and tb.rank == winner.rank
        ):
            if best_tb is None or tb.exc_line > best_tb.exc_line:
                best_tb = tb
    best_bare = None
    for item in collected.bare_exceptions:
        if (
            item["source"] == winner.source
            and 0 < winner.line - item["line"] <= 8
            and item["rank"] == winner.rank
        ):
            if best_bare is None or item["line"] > best_bare["line"]:
                best_bare = item
    if best_tb is not None and (best_bare is None or best_tb.exc_line >= best_bare["line"]):
        return best_tb, None
    return None, best_bare


def first_failing_rank(
    collected: Collected, winner: Candidate, pool: list[Candidate], world_size: int | None
) -> tuple[int | None, str]:
    launcher = collected.launcher
    if winner.category == "nccl_timeout":
        return _timeout_culprit(collected, winner, pool, world_size)
    if winner.rank is not None:
        first = _launcher_first_exit(collected, winner)
        if first is not None:
            return first, (
                f"the rank the launcher saw exit first on its own; rank {winner.rank}'s log shows the same error"
            )
        return winner.rank, "the rank that raised the root error"
    # a rank-less root line: attribute it through the launcher's exit records
    failed = [
        item
        for item in launcher.exits
        if item.exit_code not in (None, 0, -15)
        and item.signal != "SIGTERM"
        and (item.pid is None or item.pid not in launcher.sigterm_pids)
    ]
    ranks = []
    for item in failed:
        rank = item.rank if item.rank is not None else item.local_rank
        if rank is not None and rank not in ranks:
            ranks.append(rank)
    if len(ranks) == 1:
        return ranks[0], "the only rank the launcher saw fail on its own"
    if launcher.root_cause_rank is not None and (not ranks or launcher.root_cause_rank in ranks):
        return launcher.root_cause_rank, "the launcher's first observed failure"
    if ranks:
        return ranks[0], "the first rank the launcher reported failing"
    if winner.facts.get("device_index") is not None and not launcher.exits and not collected.tracks:
        # "GPU 5" is the device as that process sees it: a rank only in a lone single-process excerpt,
        # never where the log names its ranks (then GPU numbering and ranks differ across nodes)
        return winner.facts["device_index"], "the GPU index the error names (one process per GPU)"
    own = [item.rank for item in pool if item.rank is not None and item.category == winner.category]
    return (
        (own[0], "the rank that printed the root error") if own else (None, "the logs do not say which rank")
    )


_COMMS = {"nccl_timeout", "nccl_error", "rendezvous"}
_TIMEOUT_WORDS = ("timeout", "timed out", "Timeout", "Watchdog", "watchdog")


def _exception_behind_timeout(collected: Collected, pool: list[Candidate]) -> Candidate | None:
    """A collective times out because some rank stopped calling it. When a rank raised an exception of
    its own (not a communication error, not a wrapper, not itself about the timeout), that exception is
    why the others waited: it is the root, and the timeouts are its cascade."""
    reporters = {item.rank for item in pool if item.category == "nccl_timeout"}
    causes = [
        item
        for item in pool
        if item.category not in _COMMS
        and item.traceback is not None
        and item.traceback.exception
        and item.traceback.exception not in _WRAPPERS
        and item.traceback.exception not in exceptions.CASCADE_EXCEPTIONS
        and not any(word in (item.traceback.message or "") for word in _TIMEOUT_WORDS)
        and item.weight >= 0.2
        and (item.rank is None or item.rank not in reporters)
    ]
    if not causes:
        return None
    causes.sort(key=_order)
    return causes[0]


def _launcher_first_exit(collected: Collected, winner: Candidate) -> int | None:
    """Every rank raised the same start-up error, but only one rank's traceback was kept: the launcher's
    own record of the one rank that exited by itself (the others got SIGTERM) names the first failure.
    Only when that rank left no output here (else its own lines would have decided) and the launcher
    wrote into the same log as the winner (same node, so local and global ranks agree)."""
    launcher = collected.launcher
    own = []
    if "host" in collected.prefix_styles or any(item.host for item in launcher.exits):
        return None  # several nodes: a launcher's local rank does not name a global one
    for item in launcher.exits:
        rank = item.rank if item.rank is not None else item.local_rank
        if (
            rank is None
            or item.exit_code in (None, 0, -15)
            or item.signal == "SIGTERM"
            or (item.pid is not None and item.pid in launcher.sigterm_pids)
            or item.root_cause_block
        ):
            continue
        if item.source != winner.source:
            return None
        if rank not in own:
            own.append(rank)
    if len(own) != 1 or own[0] == winner.rank or own[0] in collected.tracks:
        return None
    if winner.rank >= 1 + len(launcher.sigterm_pids):
        return None  # the winner's rank is beyond this launcher's processes: another node's numbering
    return own[0]


def _timeout_culprit(
    collected: Collected, winner: Candidate, pool: list[Candidate], world_size: int | None
) -> tuple[int | None, str]:
    reporters = []
    for item in pool:
        if item.category == "nccl_timeout" and item.rank is not None and item.rank not in reporters:
            reporters.append(item.rank)
    known = set(collected.tracks)
    for item in collected.launcher.exits:
        rank = item.rank if item.rank is not None else item.local_rank
        if rank is not None:
            known.add(rank)
    if world_size and world_size <= 4096:
        known |= set(range(world_size))
    if len(reporters) >= 2 and max(reporters) < 4096:
        known |= set(range(max(reporters) + 1))  # a gap among the reporters is a rank that stayed silent
    silent = sorted(rank for rank in known if rank not in reporters)
    if reporters and len(silent) == 1:
        return silent[0], "the only rank that did not report the timeout: it stalled while the others waited"
    if reporters and len(silent) > 1:
        stalled = _oldest_progress(collected, silent)
        if stalled is not None:
            return stalled, "of the ranks that did not report the timeout, its last progress is the oldest"
        return None, "several ranks did not report the timeout; any of them may have stalled"
    if len(reporters) == 1:
        return reporters[0], "the only rank whose watchdog reported the timeout"
    if reporters:
        stalled = _oldest_progress(collected, reporters)
        if stalled is not None:
            return stalled, "every rank reported the timeout; its last progress is the oldest"
        return None, "every rank reported the timeout; the logs do not show which one stalled"
    return winner.rank, "the rank that reported the timeout"


def _oldest_progress(collected: Collected, ranks: list[int]) -> int | None:
    steps = {}
    for rank in ranks:
        track = collected.tracks.get(rank)
        if track and track.last_progress and track.last_progress[3] is not None:
            steps[rank] = track.last_progress[3]
    if len(steps) < len(ranks) or len(set(steps.values())) < 2:
        return None
    lowest = min(steps.values())
    behind = [rank for rank, step in steps.items() if step == lowest]
    return behind[0] if len(behind) == 1 else None


def _rank_without_verdict(collected: Collected) -> int | None:
    """No signature matched: a rank that died on its own (not SIGTERM, no cascade message) is still the first."""
    launcher = collected.launcher
    cascades = {hit.rank for hit in collected.cascades}
    own = []
    for item in launcher.exits:
        rank = item.rank if item.rank is not None else item.local_rank
        if rank is None or item.exit_code in (None, 0, -15) or item.signal == "SIGTERM" or rank in cascades:
            continue
        if item.pid is not None and item.pid in launcher.sigterm_pids:
            continue
        if rank not in own:
            own.append(rank)
    if len(own) == 1:
        return own[0]
    return launcher.root_cause_rank
