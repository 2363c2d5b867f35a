"""Stage 2: from what was collected, choose the root cause, its category and the first failing rank.

triage.candidates weighs every possible root; this module picks one (a collective timeout yields to an
exception another rank raised of its own) and finds the exception behind it; triage.attribution names
the first failing rank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triage.attribution import first_failing_rank, rank_without_verdict
from triage.candidates import _WRAPPERS, Candidate, _origin, bare_traceback, candidates, loader_account_of
from triage.collected import Collected
from triage.rules import code as code_rules
from triage.rules import exceptions
from triage.tracebacks import Traceback, parse_bare_exception


@dataclass
class Verdict:
    candidate: Candidate | None
    failing_rank: int | None
    root_traceback: Traceback | None
    exception: str | None
    message: str | None
    reason: str = ""
    others: list[Candidate] = field(default_factory=list)
    death: object | None = None  # no signature: the launcher's record of how the failing rank ended (a RankExit)


# categories whose root rules are forms of one failure (a full disk says "No space left", "file write failed",
# "unexpected pos"): the earliest of them, whichever rule read it, is where the failure began
_ONE_FAILURE_MANY_FORMS = ("storage",)
_TOGETHER_LINES = 40  # lines apart: two ranks' copies of one error printed in the same moment


def _same_message(one: Candidate, other: Candidate) -> bool:
    first = (one.traceback.message if one.traceback is not None else None) or one.text
    second = (other.traceback.message if other.traceback is not None else None) or other.text
    return (first or "").strip() == (second or "").strip()


def _order(candidate: Candidate):
    return (
        -round(candidate.weight, 3),
        candidate.t if candidate.t is not None else float("inf"),
        candidate.seq,
    )


def _no_silent_kill(collected: Collected) -> bool:
    """"The launcher killed its workers" suggests a silent death (the OOM killer) only when nothing says
    otherwise: no worker raised anything, none died of another signal (SIGSEGV -11, SIGABRT -6), and not
    every child the launcher saw exited with a plain code (a Python error the excerpt lacks)."""
    if any(tb.exception and tb.exception not in _WRAPPERS for tb in collected.tracebacks):
        return True
    exits = [item for item in collected.launcher.exits if item.exit_code is not None or item.signal]
    if any(item.exit_code not in (None, 0, 1, -9, 137, -15) for item in exits):
        return True
    return bool(exits) and all(
        not item.signal and item.exit_code is not None and 0 < item.exit_code < 128 for item in exits
    )


def decide(collected: Collected, world_size: int | None) -> Verdict:
    pool = [item for item in candidates(collected) if item.weight >= 0.1]
    if _no_silent_kill(collected):
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
            rank = raised[0].rank if raised[0].rank is not None else rank_without_verdict(collected)
            return Verdict(
                None, rank, origin, origin.exception, origin.message, "the rank that raised the exception"
            )
        alone = _left_alone(collected, world_size)
        if alone is not None:
            tb = alone.traceback
            return Verdict(alone, alone.rank, tb, tb.exception, tb.message,
                           "the only rank that failed: its peers finished and left it in a collective")
        rank = rank_without_verdict(collected)
        death = collected.launcher.exit_for(rank) if rank is not None else None
        if death is None or (death.exit_code in (None, 0) and not death.signal):
            return Verdict(None, rank, None, None, None, "no failure signature found")
        how = f"{death.signal} (exit code {death.exit_code})" if death.signal else f"exit code {death.exit_code}"
        return Verdict(None, rank, None, None, f"rank {rank} ended by {how} without printing an error",
                       "no failure signature found; the launcher's record of the rank that ended first",
                       death=death)
    pool.sort(key=_order)
    winner = pool[0]
    if winner.category == "nccl_timeout":
        cause = _exception_behind_timeout(collected, pool)
        if cause is not None:
            winner = cause
    elif winner.category == "rendezvous" and _WAITING.search(winner.text or ""):
        cause = _cause_behind_wait(pool)
        if cause is not None:
            winner = cause
    # prefer the earliest instance of the winning signature: the first rank that hit it
    # (the fallback classifier's ids name only a class: "exception.ValueError" is one signature per category)
    same = [item for item in pool if (item.rule_id == winner.rule_id or item.category in _ONE_FAILURE_MANY_FORMS)
            and item.category == winner.category and item.weight >= winner.weight - 0.06]
    if winner.category == "rendezvous" and not _WAITING.search(winner.text or ""):
        same = [item for item in same if not _WAITING.search(item.text or "")] or [winner]
    if len({item.source for item in same}) == 1 and any(item.t is None for item in same):
        # one file is printed in order: its reading order is the order of events, whatever lines carry a clock
        same.sort(key=lambda item: item.seq)
    else:
        same.sort(key=lambda item: (item.t if item.t is not None else float("inf"), item.seq))
    tied = [item for item in same if item.t is not None and item.t == same[0].t]
    if len({item.source for item in tied}) > 1 and all(item.rank is not None for item in tied):
        # the same logged time in two nodes' files: their order says nothing; the lowest rank
        same.sort(key=lambda item: (item.t if item.t is not None else float("inf"),
                                    item.rank if item in tied else -1, item.seq))
    winner = same[0]
    if winner.t is None and winner.rank is not None and winner.line is not None and len(collected.sources) > 1:
        # no clock, one log per node: ranks of a node that raised the same error within a few lines of each
        # other failed together, and which of them reached the node's stream first is a race; the lowest
        together = [item for item in same if item.t is None and item.rank is not None and item.source == winner.source
                    and item.line is not None and abs(item.line - winner.line) <= _TOGETHER_LINES
                    and _same_message(item, winner)]
        if together:
            winner = min(together, key=lambda item: (item.rank, item.seq))
    bare = parse_bare_exception(winner.text) if winner.traceback is None else None
    if bare is not None:
        # an exception line printed alone (a post's title, a summary line) and the same message raised later with
        # its traceback on the same rank: the traceback is the exception, with its full class and frames
        said = (bare[2] or "").strip()
        for other in same[1:]:
            if other.traceback is not None and other.rank == winner.rank and said \
                    and (other.traceback.message or "").strip() == said:
                winner = other
                break
    if winner.traceback is None and parse_bare_exception(winner.text) is None:
        # the same signature raised as an exception on the same rank says more (class, message, frames)
        # (a rankless C++ log line: the same file's exception of that signature, when one rank raised it there)
        raised_here = {other.rank for other in same[1:] if other.source == winner.source
                       and (other.traceback is not None or parse_bare_exception(other.text))}
        for other in same[1:]:
            if (other.rank == winner.rank or (winner.rank is None and other.source == winner.source
                                              and len(raised_here) == 1)) and (
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
    if winner.traceback is None and winner.line is not None and winner.category != "nccl_timeout" \
            and parse_bare_exception(winner.text) is None:
        # a C++ exception that ended the process: "terminate called after throwing an instance of
        # 'c10::OutOfMemoryError'" and its "what():" line; the winner is that line, or the C++ log line that
        # announced the same failure just before it (a watchdog's "terminated with exception: ...")
        for hit in collected.hits:
            if hit.rule.id == "code.cpp_terminate" and hit.source == winner.source and hit.rank in (winner.rank, None) \
                    and 0 <= hit.line - winner.line + 1 <= 12 and hit.facts["terminate_class"] in _NAMED_CPP \
                    and not (winner.category == "host_oom" and hit.facts["terminate_class"].endswith("DistBackendError")):
                # (a process killed for memory raises nothing: a watchdog's DistBackendError after it is a peer's)
                what = winner.text if "what():" in (winner.text or "") else _what_after(collected, hit)
                winner.facts.setdefault("exception", hit.facts["terminate_class"])
                winner.facts.setdefault("message", (what or "").strip().split("what():", 1)[-1].strip())
                break
    failing_rank, reason = first_failing_rank(collected, winner, pool, world_size)
    if winner.traceback is None and parse_bare_exception(winner.text) is None:
        near_tb, near_bare = _nearby_exception(collected, winner)
        if near_tb is None and near_bare is None and winner.category != "host_oom":
            # (a process killed for memory raises nothing: what follows is its peers' or its driver's account)
            # the same report again as the "Last error:" of an exception further on (NCCL's WARN line, then
            # "RuntimeError: NCCL error ... Last error: <the same words>"): that exception surfaced it
            for other in same[1:]:
                if other.source == winner.source and other.rank == winner.rank and other.traceback is None:
                    near_tb, near_bare = _nearby_exception(collected, other)
                    if near_tb is not None or near_bare is not None:
                        break
        if near_tb is not None:
            winner.traceback = near_tb
        elif near_bare is not None:
            winner.facts.setdefault("exception", near_bare["exception"])
            winner.facts.setdefault("message", near_bare["message"])
        else:
            winner.traceback = _surfacing_exception(collected, winner, pool, failing_rank)
            for other in same[1:]:
                # (the first line may stand apart, a post's title quoting it: a later print of the same
                # signature, on the same rank of the same file, may be where the exception follows)
                if winner.traceback is not None:
                    break
                if other.source == winner.source and other.rank == winner.rank and other.traceback is None:
                    winner.traceback = _surfacing_exception(collected, other, pool, failing_rank)
    else:
        for item in collected.bare_exceptions:
            if item["source"] == winner.source and item["line"] == winner.line:
                winner.facts.setdefault("exception", item["exception"])
                winner.facts.setdefault("message", item["message"])
                break
    if (
        winner.traceback is None
        and winner.category == "hardware"
        and parse_bare_exception(winner.text) is None
        and not winner.facts.get("exception")
    ):
        if failing_rank is not None:
            winner.traceback = _device_error_of(collected, failing_rank)
        else:
            # a kernel line (Xid, ECC) names no rank: the one rank whose CUDA call failed is where it surfaced
            surfaced = _device_errors(collected)
            if len({tb.rank for tb in surfaced}) == 1 and surfaced[0].rank is not None:
                winner.traceback, failing_rank = surfaced[0], surfaced[0].rank
                reason = "the only rank whose CUDA call failed when the GPU fault was logged"
    if winner.traceback is None and winner.category == "host_oom" and not winner.facts.get("exception"):
        # the kernel killed a DataLoader worker by its pid, and the rank that owned it reported that worker's
        # death: that report is the exception the job raised for it
        worker = _killed_worker_report(collected)
        if worker is not None and (failing_rank is None or worker.rank in (failing_rank, None)):
            winner.traceback = worker
            if failing_rank is None and worker.rank is not None:
                failing_rank = worker.rank
    root_tb = _origin(winner.traceback) if winner.traceback is not None else None
    account = loader_account_of(collected.tracebacks, root_tb) if root_tb is not None else None
    if account is not None:
        root_tb = account
    exception, message = _exception(winner, root_tb)
    matched = winner.traceback
    if account is not None and matched is not None and matched is not account and matched.exception:
        message = f"{message} (while handling {matched.exception}: {matched.message})"
    elif root_tb is not None and matched is not None and matched is not root_tb and matched.exception:
        # keep the chain readable: the origin first, then what the chain's last exception said about it (the one
        # the user saw last: "The vLLM server can't be reached", not the HTTP pool's retries in between)
        last = _last_in_chain(collected, matched)
        message = f"{message} (then {last.exception}: {last.message})"
    elif root_tb is not None:
        reraise = next((tb for tb in collected.tracebacks if tb.previous is root_tb and tb.chained_to_previous
                        and tb.exception and tb.exception not in _WRAPPERS and tb.message
                        and tb.message not in (message or "")), None)
        if reraise is not None:
            # what the code around it said while handling it: the DataLoader's "Caught X in DataLoader worker
            # process N", a library's advice ("Unable to create tensor, ... activate truncation and/or padding"),
            # the last of a chain (a trainer's "The vLLM server can't be reached" over the HTTP pool's retries)
            last = _last_in_chain(collected, reraise)
            reraise = last if last.message and last.message not in (message or "") else reraise
            said = reraise.message if len(reraise.message) <= 300 else reraise.message[:297] + "..."
            message = f"{message} (then {reraise.exception}: {said})"
    return Verdict(winner, failing_rank, root_tb, exception, message, reason, pool[1:6])


def _last_in_chain(collected: Collected, tb: Traceback) -> Traceback:
    """The outermost exception raised from (or while handling) this one, wrappers aside."""
    for _ in range(20):
        following = next((other for other in collected.tracebacks if other.previous is tb and other.chained_to_previous
                          and other.exception and other.exception not in _WRAPPERS), None)
        if following is None:
            return tb
        tb = following
    return tb


# C++ exception classes that torch also raises in Python under the same name (not c10::Error or
# std::runtime_error, which name nothing)
_NAMED_CPP = {"OutOfMemoryError", "DistBackendError", "DistNetworkError", "DistStoreError", "EnforceNotMet",
              "AcceleratorError"}


def _what_after(collected: Collected, terminate) -> str | None:
    """The "what():" line printed under a "terminate called ..." line, when the rules read it."""
    for hit in collected.hits:
        if hit.source == terminate.source and 0 < hit.line - terminate.line <= 2 and "what():" in (hit.text or ""):
            return hit.text
    return None


def _left_alone(collected: Collected, world_size: int | None) -> Candidate | None:
    """Every traceback says a peer closed the connection, on some ranks only, and the launcher reports no
    other rank failing: the peers ended normally while these ranks still waited in a collective. That is a
    collective called unevenly (an extra barrier on one rank), a bug of the script, not of the network."""
    cascade_lines = {(hit.source, hit.line) for hit in collected.cascades}
    lost = [tb for tb in collected.tracebacks if tb.exception and (tb.source, tb.exc_line) in cascade_lines
            and tb.rank is not None]
    failed = {item.rank for item in collected.launcher.exits
              if item.rank is not None and (item.exit_code not in (None, 0) or item.signal)}
    ranks = {tb.rank for tb in lost}
    if not lost or not world_size or len(ranks) >= world_size or not failed or not failed <= ranks:
        return None
    if any(tb.exception not in _WRAPPERS and (tb.source, tb.exc_line) not in cascade_lines
           for tb in collected.tracebacks if tb.exception):
        return None
    first = min(lost, key=lambda tb: (tb.t if tb.t is not None else float("inf"), tb.seq))
    category, fixes, weight, summary = code_rules.LEFT_ALONE
    return Candidate(category, weight, list(fixes), "code.collective_left_alone", summary, first.rank,
                     first.source, first.exc_line, first.exc_text, first.seq, first.t,
                     {"classified_by": "peers that finished while this rank waited in a collective"}, first)


def _device_errors(collected: Collected) -> list[Traceback]:
    return [
        tb
        for tb in collected.tracebacks
        if tb.exception and tb.exception not in _WRAPPERS and ("CUDA" in tb.message or "cuda" in tb.message)
    ]


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
    # no rank prefix on the traceback (the script logged the rank on the line before): the only one of no rank
    rankless = [tb for tb in collected.tracebacks if tb.rank is None and tb.exception and tb.exception not in _WRAPPERS
                and ("CUDA" in tb.message or "cuda" in tb.message)]
    if len({tb.message for tb in rankless}) == 1:
        return rankless[0]
    # a CUDA error printed as a bare line (a script's own "caught exception" logging): that rank's, or the
    # only one of no rank
    bare = [item for item in collected.bare_exceptions
            if item["rank"] in (rank, None) and item["exception"] not in _WRAPPERS
            and ("CUDA" in item["message"] or "cuda" in item["message"])]
    if bare and (any(item["rank"] == rank for item in bare) or len({item["message"] for item in bare}) == 1):
        return bare_traceback(next((item for item in bare if item["rank"] == rank), bare[0]))
    return None


# a message that is itself another exception's line ("InductorError: OSError: [Errno 122] Disk quota exceeded"):
# the wrapper passed on what was raised inside it
_RESTATED = re.compile(r"([A-Za-z_][\w.]{0,120}(?:Error|Exception)): (\S.*)", re.DOTALL)


def _exception(winner: Candidate, root_tb: Traceback | None) -> tuple[str | None, str | None]:
    if winner.facts.get("exception"):
        return winner.facts["exception"], winner.facts.get("message") or winner.text
    if root_tb is not None and root_tb.exception:
        inner = _RESTATED.match(root_tb.message or "")
        if inner:
            return inner.group(1).rsplit(".", 1)[-1], f"{inner.group(2)} (raised through {root_tb.exception})"
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


def _surfacing_exception(collected: Collected, winner: Candidate, pool: list[Candidate],
                         failing_rank: int | None = None) -> Traceback | None:
    """The Python exception that surfaces a root line printed just before it (a kernel assertion, a
    DataLoader worker's bus error): same file, same rank (or an unprefixed root line), within a
    screenful after it, and itself recognised as the same kind of failure; never another rank's than the
    one found to fail first (a killed rank's peers raise only what they lost)."""
    if winner.source is None or winner.line is None or winner.rule_id.startswith("launcher."):
        return None
    same_kind = set()
    for item in pool:
        if item.category == winner.category:
            same_kind.add((item.source, item.line))
            if item.traceback is not None:
                same_kind.add((item.traceback.source, item.traceback.exc_line))
    options = [*collected.tracebacks, *(bare_traceback(item) for item in collected.bare_exceptions)]
    following = [
        tb
        for tb in options
        if tb.source == winner.source
        and tb.exc_line is not None
        and 0 < tb.exc_line - winner.line <= SURFACING_WINDOW
        and (winner.rank is None or tb.rank in (winner.rank, None))
        and (winner.rank is not None or failing_rank is None or tb.rank in (failing_rank, None))
        and tb.exception
        and tb.exception not in _WRAPPERS
        and (_same_kind(tb, winner.category, same_kind) or _bare_raise_after(tb, winner))
    ]
    return min(following, key=lambda tb: tb.exc_line, default=None)


_WORKER_PID = re.compile(r"worker \(pid:? (\d{1,9})\)")
_KILLED_PID = re.compile(r"Killed process (\d{1,9})|oom_kill_process.{0,40}\bpid[= ](\d{1,9})|task=\S+,pid=(\d{1,9})")


def _killed_worker_report(collected: Collected) -> Traceback | None:
    """The traceback whose message names, as a DataLoader worker's pid, a process the kernel's OOM killer
    killed ("Out of memory: Killed process 33581" and "DataLoader worker (pid 33581) is killed by signal")."""
    pids = set()
    for hit in collected.hits:
        if hit.rule.id == "memory.kernel_oom_killer":
            for found in _KILLED_PID.finditer(hit.text or ""):
                pids.add(next(group for group in found.groups() if group))
    if not pids:
        return None
    for tb in collected.tracebacks:
        worker = _WORKER_PID.search(tb.message or "")
        if worker and worker.group(1) in pids:
            return tb
    return None


SURFACING_WINDOW = 60  # lines: a screenful between a root line and the Python exception that reports it
MESSAGE_LINES = 4  # an exception's message may continue on the lines after it ("RuntimeError:" then the text)


# a bare `raise AssertionError` (no message) this close after a root line is the script stopping on what that
# line logged ("NaN detected", then the check that raises)
_BARE_RAISE_WINDOW = 15


def _bare_raise_after(tb: Traceback, winner: Candidate) -> bool:
    return tb.exception == "AssertionError" and not (tb.message or "").strip() \
        and 0 < tb.exc_line - winner.line <= _BARE_RAISE_WINDOW


def _same_kind(tb: Traceback, category: str, same_kind: set) -> bool:
    """The exception is recognised as the same failure: a rule matched its line or its message's next
    lines, or the fallback classifier puts it in the same category."""
    if any((tb.source, tb.exc_line + offset) in same_kind for offset in range(MESSAGE_LINES)):
        return True
    guess = exceptions.classify(tb.exception, tb.message, tb.frames, tb.full_name)
    return guess is not None and guess[0] == category


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


_COMMS = {"nccl_timeout", "nccl_error", "rendezvous"}


_TIMEOUT_WORDS = ("timeout", "timed out", "Timeout", "Watchdog", "watchdog")


# the store's side of a job that did not form: a process waiting for peers that never came
_WAITING = re.compile(
    r"waiting for (?:clients|workers|peers)|clients joined|wait timeout after|store->get|ncclUniqueId|"
    r"[Ww]aiting for (?:all )?(?:the )?other (?:ranks|nodes|processes)"
)


def _cause_behind_wait(pool: list[Candidate]) -> Candidate | None:
    """Node 0 waits at the rendezvous store for a node that never arrives: whatever that node printed
    (an import error, a network interface it cannot find, a connection it could not make) is why."""
    causes = [
        item
        for item in pool
        if item.weight >= 0.2
        and item.category != "nccl_timeout"
        and not _WAITING.search(item.text or "")
        and not (item.traceback is not None and item.traceback.exception in _WRAPPERS)
    ]
    if not causes:
        return None
    causes.sort(key=_order)
    return causes[0]


# what a launcher's record of a rank killed outright means (the OOM killer's SIGKILL, a crash's signal)
_KILLED = frozenset({"host_oom", "code_bug", "hardware"})


def _killed_before_timeouts(pool: list[Candidate], first_report: dict) -> list[Candidate]:
    """A rank the launcher saw killed (no exception of its own), by the clock before any peer's watchdog
    fired, that reported no timeout itself: the peers waited for the dead rank (a Slurm cgroup's OOM kill
    half an hour before the watchdogs)."""
    fired = [item.t for item in pool if item.category == "nccl_timeout" and item.t is not None]
    if not fired:
        return []
    return [item for item in pool
            if item.category in _KILLED and item.traceback is None and item.seq >= 10**9
            and item.rank is not None and item.rank not in first_report
            and item.t is not None and item.t < min(fired)]


def _exception_behind_timeout(collected: Collected, pool: list[Candidate]) -> Candidate | None:
    """A collective times out because some rank stopped calling it. When a rank raised an exception of
    its own (not a communication error, not a wrapper, not itself about the timeout), that exception is
    why the others waited: it is the root, and the timeouts are its cascade."""
    first_report: dict = {}  # each reporting rank's first timeout, in reading order
    for item in pool:
        if item.category == "nccl_timeout":
            first_report[item.rank] = min(first_report.get(item.rank, item.seq), item.seq)
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
        # (a rank that timed out too counts when its own exception came before its timeout: a thread of it
        # died, and the rank then waited for what that thread never delivered)
        and (item.rank is None or item.seq < first_report.get(item.rank, float("inf")))
    ]
    if not causes:
        # a rank whose own network transport failed (NCCL's IB/socket error) while it reported no timeout: the
        # others then waited on it
        causes = [item for item in pool if item.rule_id == "nccl.network" and item.rank is not None
                  and item.rank not in first_report and first_report]
    if not causes:
        causes = _killed_before_timeouts(pool, first_report)
    if not causes:
        return None
    causes.sort(key=_order)
    return causes[0]
