"""Stage 2a: every line or exception that could be the root cause becomes a weighted candidate.

Weights start from the rule's specificity (triage.rules) and are adjusted by what surrounds the line:
the adjustments are named here, each with the reason it exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triage import rules, timestamps
from triage.collected import Collected, Hit
from triage.ranks import mentioned_rank
from triage.rules import CONFIRMATION, HINT, ROOT, exceptions, signals
from triage.tracebacks import Traceback

TRACEBACK_BONUS = 0.05  # the rule matched the exception line of a whole traceback: class, message and frames agree
BENIGN_FACTOR = 0.5  # a matching line that says the job went on ("skipping", "falling back", ", ok")
# an import failure as raised (its class, or the import statement's own words), not quoted by a warning or a log
_RAISED_IMPORT = re.compile(r"(?:Error|Exception):|\bfrom\b|\bimport\b.{0,80}\bfailed\b")
HINT_UNDER_EXCEPTION = 0.5  # a frame hint never outranks what the exception line itself says
HANDLED_FACTOR = 0.3  # an exception the process printed and survived (caught and logged) is no root
CONFIRMED_BONUS = 0.15  # another line of the same category confirms it (the kernel OOM killer for host_oom)



_WRAPPERS = exceptions.WRAPPERS  # the one list lives with the rules (triage/rules/exceptions.py)


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


# words of a line that reports a condition the program handled and went past
_BENIGN = re.compile(
    r"\b(?:skipping|skipped|falling back|fall back|fallback|will be ignored|is ignored|ignoring|"
    r"using \w+ instead|optional(?:ly)?|for (?:faster|better) \w+)\b|, ok\b|: ok\b|"
    # pip's resolver at install time: a conflict it reports and installs anyway, not the job's failure
    r"but you have [\w\-.]+ [\w.+\-]+ which is incompatible",
    re.IGNORECASE,
)


def _traceback_index(collected: Collected) -> dict[tuple[str, int], Traceback]:
    return {(tb.source, tb.exc_line): tb for tb in collected.tracebacks if tb.exc_line is not None}


def _frame_index(collected: Collected) -> dict[tuple[str, int], Traceback]:
    index = {}
    for tb in collected.tracebacks:
        for frame in tb.frames:
            index[(tb.source, frame.get("log_line"))] = tb
    return index


# a message's later lines ("Last error:" / "Duplicate GPU ...") follow its exception line within a few lines
_CONTINUATION_LINES = 12


def _by_source(collected: Collected) -> dict[str, list[Traceback]]:
    index: dict[str, list[Traceback]] = {}
    for tb in collected.tracebacks:
        if tb.exc_line is not None:
            index.setdefault(tb.source, []).append(tb)
    return index


def _continued(hit, by_source: dict[str, list[Traceback]]) -> Traceback | None:
    """The traceback whose exception message goes on onto the hit's line (a multi-line message's later line)."""
    for tb in by_source.get(hit.source, ()):
        if tb.exc_line < hit.line <= tb.exc_line + _CONTINUATION_LINES and hit.rule.match(tb.message or ""):
            return tb
    return None


def _chain(tb: Traceback | None, links: int = 21) -> list[Traceback]:
    """A traceback and the exceptions it re-raised or was raised from, the last raised first."""
    out = []
    while tb is not None and len(out) < links:
        out.append(tb)
        tb = tb.previous
    return out


def _whole_chain_frames(tb: Traceback) -> list[dict]:
    """The frames of a traceback and of the exception it re-raised or was raised from, the first cause first."""
    return [frame for link in reversed(_chain(tb)) for frame in link.frames]


def _chain_messages(tb: Traceback | None) -> str:
    """The messages of a traceback and of the exceptions it was raised from (the first cause last)."""
    return "\n".join(link.message or "" for link in _chain(tb, links=20))


def candidates(collected: Collected) -> list[Candidate]:
    by_exc_line = _traceback_index(collected)
    by_frame = _frame_index(collected)
    by_source = _by_source(collected)
    out: list[Candidate] = []
    claimed: set[int] = set()
    confirmations = [hit for hit in collected.hits if hit.rule.role == CONFIRMATION]
    for hit in collected.hits:
        tb = by_exc_line.get((hit.source, hit.line))
        on_exception_line = tb
        weight = hit.weight
        if tb is not None:
            weight += TRACEBACK_BONUS
        elif hit.rule.role == HINT:
            tb = by_frame.get((hit.source, hit.line))
            if tb is not None and tb.exception is not None:
                weight *= HINT_UNDER_EXCEPTION
        elif hit.rule.role == ROOT and _BENIGN.search(hit.text or ""):
            weight *= BENIGN_FACTOR
        elif hit.rule.id == "versions.cannot_import" and not _RAISED_IMPORT.search(hit.text or ""):
            # "No module named 'x'" with no exception class and no traceback: a quote of one (a warning's
            # second line, a log message), weaker than an exception the log raised
            weight *= BENIGN_FACTOR
        category, fixes, summary = hit.rule.category, list(hit.rule.fixes), hit.rule.summary
        meant = None
        if hit.rule.within:  # a line without a traceback (nor a message it continues) is read with no frames
            read = tb or _continued(hit, by_source)
            meant = hit.rule.within(f"{hit.text or ''}\n{_chain_messages(read)}", list(read.frames) if read else [])
        if meant is False:
            continue  # the rule's reading says the line is not its failure: the exception layer reads it
        if on_exception_line is not None:
            claimed.add(id(on_exception_line))
        if meant is not None:
            category, fixes, summary = meant[0], list(meant[1]), meant[2]
        elif hit.rule.reading_data and tb is not None and exceptions.reading_data(_whole_chain_frames(tb)):
            category, fixes, summary = hit.rule.reading_data[0], list(hit.rule.reading_data[1]), hit.rule.reading_data[2]
        out.append(
            Candidate(
                category,
                weight,
                fixes,
                hit.rule.id,
                summary,
                # (a traceback that names its own rank, DCP's "(RANK 7)", speaks for the rank that raised it)
                tb.rank if tb is not None and (tb.rank_named or hit.rank is None) else hit.rank,
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
    cascade_lines = {(hit.source, hit.line) for hit in collected.cascades}
    for tb in collected.tracebacks:
        if id(tb) in claimed or tb.exception is None:
            continue
        if (tb.source, tb.exc_line) in cascade_lines:
            continue  # "Connection closed by peer" and its kind: another rank's failure, never a root
        if tb.previous is not None and tb.chained_to_previous and exceptions.REraised.match(tb.message or ""):
            continue  # "Caught KeyError in DataLoader worker process 1": its origin, chained before it, speaks
        spelled = _raised_literal(tb)
        if spelled is not None:
            found = _rule_for(spelled)
            if found is not None:
                rule = found
                out.append(Candidate(
                    rule.category, rule.weight, list(rule.fixes), rule.id, rule.summary,
                    tb.rank if tb.rank is not None else mentioned_rank(tb.exc_text), tb.source, tb.exc_line,
                    tb.exc_text, tb.seq, tb.t, {"read_from": "the raise statement's message (the log cut it)"}, tb,
                ))
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
    out.extend(_native_crash_candidates(collected))
    handled = _handled_tracebacks(collected)
    for candidate in out:
        if candidate.traceback is not None and id(candidate.traceback) in handled:
            # the process printed this exception and went on to fail differently later: it was caught
            candidate.weight *= HANDLED_FACTOR
    _demote_wrappers(out)
    _workers_the_oom_killer_named(out, confirmations)
    for candidate in out:
        same = [
            hit
            for hit in confirmations
            if hit.rule.category == candidate.category and hit is not candidate.hit
        ]
        if same:
            candidate.confirmations = same[:5]
            candidate.weight += CONFIRMED_BONUS
    return out


_WORKER_PIDS = re.compile(r"DataLoader worker \(pid\(?s?\)? ?([\d, ]+)\)")
_OOM_KILLED_PID = re.compile(r"Killed process (\d{1,9})")


def _workers_the_oom_killer_named(out: list[Candidate], confirmations: list[Hit]) -> None:
    """A DataLoader worker killed by SIGKILL whose pid the kernel's OOM killer names: the host ran out of memory
    and the killer picked the worker, so the host's memory is the failure (fewer workers first)."""
    killed = {found.group(1) for hit in confirmations if hit.rule.id == "memory.kernel_oom_killer"
              for found in _OOM_KILLED_PID.finditer(hit.text or "")}
    if not killed:
        return
    for candidate in out:
        if candidate.rule_id != "dataloader.worker_oom":
            continue
        worker = _WORKER_PIDS.search(candidate.text or "")
        if worker and killed & {pid.strip() for pid in worker.group(1).split(",")}:
            candidate.category = "host_oom"
            candidate.fixes = ["reduce_dataloader_workers", "reduce_batch_size", "fix_config"]
            candidate.summary = ("the kernel's OOM killer killed a DataLoader worker (its pid): the host ran out of "
                                 "memory; fewer workers, smaller batches")


BARE_FACTOR = 0.8  # an exception line printed without its traceback says less than a whole traceback


_LITERAL = re.compile(r"""raise \w[\w.]*\(\s*f?(["'])(.{10,300}?)\1""")


def _raised_literal(tb: Traceback) -> str | None:
    """The whole message of an exception whose printed message the log cut short: the string literal of
    the `raise X("...")` line under the last frame, when the printed message is a prefix of it."""
    if not tb.frames or not tb.message or len(tb.message.strip()) < 10:
        return None
    found = _LITERAL.search(str(tb.frames[-1].get("code", "")))
    if found is None:
        return None
    literal, printed = found.group(2), tb.message.strip()
    if len(literal) <= len(printed) or not literal.startswith(printed):
        return None
    return f"{tb.exception}: {literal}"


def _rule_for(text: str):
    """The most specific root rule that matches a text, or None."""
    roots = [rule for rule, _match in rules.matching(text) if rule.role == ROOT]
    return max(roots, key=lambda rule: rule.weight, default=None)


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
        if tb is None or candidate.rule_id in _EXPLAINS_ITS_CAUSE:
            continue
        link, hops = tb, 0
        while link.previous is not None and link.chained_to_previous and hops < 20:
            link, hops = link.previous, hops + 1
            causes = by_tb.get(id(link), [])
            if any(cause.weight >= STRONG_CAUSE and cause.category != candidate.category for cause in causes):
                candidate.weight *= WRAPPER_FACTOR
                break


# rules whose line is a library's own explanation of the exception it was raised from ("The `bbox` coordinate
# values should be within 0-1000 range" over "index out of range in self"): more telling than the cause
_EXPLAINS_ITS_CAUSE = frozenset({"data.values_out_of_range"})


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
                origin = _origin(later)
                # the same failure again (an elastic restart, a log pasted twice): not a sign it was caught
                again = origin.exception == tb.exception and origin.message == tb.message
                if (
                    not chained
                    and not again
                    and later.exception != tb.exception
                    and later.exception not in _WRAPPERS
                    and later.exception not in exceptions.CASCADE_EXCEPTIONS
                    and (later.source, later.exc_line) not in cascade_lines
                ):
                    out.add(id(tb))
                    break
    return out


def _signal_candidates(collected: Collected) -> list[Candidate]:
    """A rank that died of a signal with no exception of its own: what that signal means (rules/signals.py)."""
    out = []
    for item in collected.launcher.exits:
        if item.pid is not None and item.pid in collected.launcher.sigterm_pids:
            # the launcher was ending this process already (it sent it SIGTERM): a SIGKILL after that is its own
            # escalation ("Unable to shutdown process ... forcefully exiting via Signals.SIGKILL"), not a kill
            continue
        for meaning in signals.MEANINGS:
            if meaning.covers(item.exit_code, item.signal):
                rank = item.rank if item.rank is not None else item.local_rank
                out.append(Candidate(
                    meaning.category, meaning.weight, list(meaning.fixes), meaning.id, meaning.summary, rank,
                    item.source, item.line, item.text, 10**9, _exit_time(item, collected.year),
                    {"exit_code": item.exit_code, "signal": next(iter(meaning.names))},
                ))
    return out


def _exit_time(item, year: int | None) -> float | None:
    """When the launcher saw the rank end: its own line's clock, or the Root Cause block's `time` field."""
    when = timestamps.parse(item.text or "", year)
    if when is None and item.time:
        when = timestamps.parse(item.time.replace("_", " "), year)
    return when


NATIVE_CRASH_WEIGHT = 0.5  # a signal with the script's own frame innermost: its call into native code


def _native_crash_candidates(collected: Collected) -> list[Candidate]:
    """A faulthandler stack (segfault, abort) whose innermost frame is the script's own code: the script
    handed native code something it could not take (a ctypes call, a bad pointer or buffer). When the
    innermost frame is a library's, nothing here says whose fault it is (left to the launcher's record)."""
    out = []
    for stack in collected.fault_stacks:
        if not stack.frames or exceptions.library_file(stack.frames[0]["file"]):
            continue
        innermost = stack.frames[0]
        out.append(
            Candidate(
                "code_bug",
                NATIVE_CRASH_WEIGHT,
                ["fix_code"],
                "code.native_crash",
                f"the process died of a {stack.signal.lower()} inside native code called from the script's own "
                f"{innermost['function']} ({innermost['file'].rsplit('/', 1)[-1]}:{innermost['line']})",
                stack.rank,
                stack.source,
                stack.line,
                stack.text,
                stack.seq,
                stack.t,
                {"signal": stack.signal, "frame": f"{innermost['file']}:{innermost['line']}"},
            )
        )
    return out


# low-level errors that libraries wrap into their own, more telling exception
_GENERIC_CAUSES = {"KeyError", "HTTPError", "HTTPStatusError", "ConnectionError", "MaxRetryError", "IndexError",
                   "StopIteration", "ReadTimeout", "ConnectTimeout", "ReadTimeoutError", "NewConnectionError"}
# datasets' JSON builder tries pyarrow, then the json module or pandas as fallbacks, and re-raises
# pyarrow's error "during handling" of the fallback's: the pyarrow error is the one that names the row
_FALLBACK_PAIRS = {("ArrowInvalid", "JSONDecodeError"), ("ArrowTypeError", "JSONDecodeError"),
                   ("ArrowInvalid", "ValueError"), ("ArrowTypeError", "ValueError")}


# the Hub client's lookup errors: a loader (transformers' cached_file, peft's config lookup) catches them and,
# in the handler, raises its own OSError/ValueError naming the file or repo that is missing
_HUB_PROBES = {"LocalEntryNotFoundError", "EntryNotFoundError", "HFValidationError", "OfflineModeIsEnabled",
               "RepositoryNotFoundError", "RevisionNotFoundError"}


def _loader_account(tb: Traceback) -> bool:
    """Raised in the handler of a Hub lookup's miss, by the loader that made the lookup."""
    return (tb.while_handling and tb.previous is not None and tb.previous.exception in _HUB_PROBES
            and tb.exception in ("OSError", "ValueError", "EnvironmentError"))


def loader_account_of(tracebacks: list[Traceback], origin: Traceback) -> Traceback | None:
    """The loader's own exception raised while handling the Hub lookup miss that ``origin`` began, if any."""
    if origin.exception not in _HUB_PROBES:
        return None
    return next((tb for tb in tracebacks if _loader_account(tb) and origin in _chain(tb.previous)), None)


def _origin(tb: Traceback) -> Traceback:
    """The exception a chain started from. Walking inward from the exception that ended the process,
    stop at a fallback pair (datasets reads JSON with pyarrow first; the json module is only its fallback);
    then take the innermost link that is not a generic low-level error: `raise ValueError("model type
    'x' not recognised") from KeyError('x')` is about the ValueError, `GatedRepoError` says more than the
    HTTPError under it."""
    chain = [tb]
    while chain[-1].previous is not None and chain[-1].chained_to_previous and len(chain) < 20:
        if (chain[-1].exception, chain[-1].previous.exception) in _FALLBACK_PAIRS:
            break
        if _loader_account(chain[-1]):
            break  # a loader caught the Hub lookup's miss and raised its own account of what is missing
        chain.append(chain[-1].previous)
    for link in reversed(chain):
        if link.exception not in _GENERIC_CAUSES:
            return link
    return chain[-1]
