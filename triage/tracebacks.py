"""Python tracebacks from log lines: plain, flattened (indentation lost), rich/loguru boxes,
chained (`During handling...`, `The above exception...`), RemoteTraceback, and several ranks
interleaved (one assembler per rank)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triage.decorations import core

HEADER = "Traceback (most recent call last)"
_FRAME = re.compile(r'File "([^"]{1,500})", line (\d+)(?:, in ([^\s│]{1,200}))?')
# IPython / Jupyter: "File ~/x/trainer.py:1539, in Trainer.train(self, ...)", "Cell In[7], line 12",
# and the older "/x/trainer.py in train(self, ...)"
_IPY_FRAME = re.compile(r"^\s*File (\S{1,500}?\.pyx?):(\d+), in ([\w.<>]{1,200})")
_IPY_CELL = re.compile(r"^\s*Cell In ?\[(\d+)\], line (\d+)")
_IPY_OLD = re.compile(r"^\s*(\S{1,500}\.pyx?) in ([\w.<>]{1,200})\(")
_RANK_AFTER_HEADER = re.compile(r"most recent call last\):\s*\(RANK (\d{1,6})\)")
_IPY_CONTEXT = re.compile(r"^\s*(?:-*>\s*)?\d{1,6}(?: |$)|^\s*\(\.\.\.\)\s*$")
_RICH_FRAME = re.compile(r"[│|]\s*(\S{1,500}?\.pyx?):(\d+)(?: in ([^\s│]{1,200}))?")
_EXC = re.compile(
    r"^\s{0,6}((?:[A-Za-z_][\w]{0,80}\.){0,8}"
    # (a private class keeps its leading underscore: numpy's _ArrayMemoryError, _UFuncOutputCastingError)
    r"(?:_{0,2}[A-Z][\w]{0,80}(?:Error|Exception|Exit|Interrupt|Iteration|Failure|Fault|Timeout|Warning)|"
    # (a class named without a suffix is CamelCase, EnforceNotMet, RemoteDisconnected: never one English word,
    # "Environment: I built it against ...")
    r"Exception|KeyError|StopIteration|KeyboardInterrupt|SystemExit|BdbQuit|[A-Z][a-z]+[A-Z][A-Za-z]{1,60}(?=:)|"
    # a module's own class named just Error (csv's `_csv.Error`)
    r"(?<=\.)Error(?=:)|"
    # standard modules whose exception class is a lowercase `error`
    r"(?:(?<=re\.)|(?<=socket\.)|(?<=zlib\.)|(?<=struct\.))error(?=:)))"
    # (a message of any length: a row quoted whole in it can run past a few thousand characters)
    r"(?::\s?(.*))?$"
)
_HEADER_BYTES = HEADER.encode()
_CHAIN_CAUSE = "The above exception was the direct cause"
_CHAIN_DURING = "During handling of the above exception"
MAX_BODY = 400


MAX_OPENER_BYTES = 200  # a header line longer than this is never taken for a repeat
MAX_REMEMBERED_OPENERS = 4096  # distinct opener lines remembered per source (ranks x prefix styles)


def repeated_opener(raw: bytes, previous: bytes | None) -> bool:
    """A traceback header line identical to the candidate line just before it adds nothing: the
    second opens the same empty traceback the first did. Skipping it keeps a log of a million
    `Traceback (most recent call last):` lines at the cost of a byte comparison per line."""
    return raw == previous and _HEADER_BYTES in raw and len(raw) < MAX_OPENER_BYTES


class Assemblers(dict):
    """The per-rank traceback assemblers of one source ({rank: TracebackAssembler}), which also
    remember which empty traceback each short opener line opened.

    `repeated(raw)` is true for a header line whose bytes already opened the traceback that is
    still open, and still empty, in its rank's assembler: feeding it again would only replace that
    empty traceback by another one. This generalises `repeated_opener` from "the same line twice
    in a row" to openers of several ranks alternating or interleaved in any order
    (`[rank0]: Traceback...` / `[rank1]: Traceback...` repeated a million times): each distinct
    opener line is parsed once per traceback it opens, every repeat costs one dict lookup. The
    skipped repeat leaves the open traceback's start line at the first header of the run, as the
    consecutive case always did. Any line fed to that rank (a frame, text, another opener with
    other bytes) makes the remembered traceback non-empty or not current, so the next header of
    that rank is parsed as usual.
    """

    def __init__(self):
        super().__init__()
        self._opened: dict[bytes, tuple[TracebackAssembler, Traceback]] = {}
        self._candidate: bytes | None = None  # the opener line being parsed now
        self.skipped = 0

    def __setitem__(self, rank, assembler) -> None:
        assembler.on_open = self._remember
        super().__setitem__(rank, assembler)

    def repeated(self, raw: bytes) -> bool:
        """Call it for every line, in order: it also notes the opener line about to be parsed."""
        self._candidate = None
        if len(raw) >= MAX_OPENER_BYTES or _HEADER_BYTES not in raw:
            return False
        self._candidate = raw  # if the caller parses it after all, remember what it opens
        opened = self._opened.get(raw)
        if opened is not None:
            assembler, traceback = opened
            if assembler.current is traceback and traceback.lines_seen == 0:
                self.skipped += 1
                return True
            del self._opened[raw]
        return False

    def _remember(self, assembler: TracebackAssembler) -> None:
        raw, self._candidate = self._candidate, None
        if raw is not None and (raw in self._opened or len(self._opened) < MAX_REMEMBERED_OPENERS):
            self._opened[raw] = (assembler, assembler.current)


@dataclass
class Traceback:
    source: str
    rank: int | None
    start_line: int
    exception: str | None = None  # short class name
    full_name: str | None = None
    message: str = ""
    frames: list[dict] = field(default_factory=list)
    exc_line: int | None = None
    exc_text: str = ""
    chained_to_previous: bool = False  # an exception raised while handling / because of the previous one
    while_handling: bool = False  # chained by "During handling ..." (raised in an except block, not `from` it)
    rank_named: bool = False  # the header named the rank that raised it ("(RANK 7)"), not the stream's
    remote: bool = False
    seq: int = 0
    t: float | None = None
    lines_seen: int = 0
    since_frame: int = 0
    previous: Traceback | None = None  # the exception this one was raised from (chains)
    lead: str = ""  # the line printed just before it opened (Ray's "Unhandled error ... ray::X() (pid=P, ip=...)")

    def evidence(self) -> list[dict]:
        """The exception line first, then the frame that raised it."""
        items = []
        if self.exc_line is not None:
            items.append({"source": self.source, "line": self.exc_line, "text": self.exc_text})
        if self.frames:
            last = self.frames[-1]
            items.append({"source": self.source, "line": last.get("log_line"), "text": last.get("text", "")})
        return items


_EXCEPTION_LIKE = re.compile(r"(?:Error|Exception|Exit|Interrupt|Iteration|Invalid|Failure|Fault|Timeout)$")


# `python -m pkg.mod` whose package is not installed: the interpreter names the exception in parentheses
_RUN_MODULE = re.compile(r"Error while finding module specification for '[\w.]+' \((\w+(?:Error|Exception)): (.*)\)\s*$")


def parse_bare_exception(text: str) -> tuple[str, str, str] | None:
    """An exception line seen outside a traceback: only names that look like exception classes count."""
    parsed = parse_exception_line(core(text))
    if parsed is None:
        named = _RUN_MODULE.search(text)
        return (named.group(1), named.group(1), named.group(2)) if named else None
    if not _EXCEPTION_LIKE.search(parsed[0]):
        return None
    return parsed


_EXCEPTION_SUFFIX = re.compile(r"(?:Error|Exception|Exit|Interrupt|Iteration|BdbQuit)$")
_PROGRESS_MESSAGE = re.compile(r"\s*\d{1,3}%\s*\||\s*\d+(?:\.\d+)?(?:it|ex|examples|ba)?/s\b|\s*\d+/\d+ \[")


_GLUED_CLASS = re.compile(r"([A-Z]\w*?(?:Error|Exception))\1+")


def parse_exception_line(text: str) -> tuple[str, str, str] | None:
    """('KeyError', 'builtins.KeyError', "'x'") for an exception line, else None."""
    stripped = text.strip().strip("│").strip()
    if not stripped or stripped.startswith(("File ", "Traceback", "raise ", "return ", "def ", "class ")):
        return None
    match = _EXC.match(stripped)
    if not match:
        return None
    full = match.group(1)
    message = (match.group(2) or "")[:2000].strip()
    short = full.rsplit(".", 1)[-1]
    glued = _GLUED_CLASS.fullmatch(short)
    if glued:
        # ranks printing into one another glue the same class name together ("RuntimeErrorRuntimeError")
        short = glued.group(1)
        full = full[: len(full) - len(match.group(1).rsplit(".", 1)[-1])] + short
    if (
        short in ("Traceback", "Note", "Warning", "Error", "Info", "Args", "Failures", "Exit")
        and full == short
    ):
        return None
    named_like_one = bool(_EXCEPTION_SUFFIX.search(short))
    if match.group(2) is None and not named_like_one:
        return None
    if _PROGRESS_MESSAGE.match(message) and not named_like_one:
        return None  # "Map: 100%|####| 48211/48211 [...]": a progress bar's label, not an exception
    return short, full, message


def parse_frame(text: str) -> dict | None:
    match = _FRAME.search(text)
    if match:
        return {"file": match.group(1), "line": int(match.group(2)), "function": match.group(3) or "<module>"}
    match = _RICH_FRAME.search(text)
    if match:
        return {"file": match.group(1), "line": int(match.group(2)), "function": match.group(3) or "?"}
    if "File " in text or "Cell In" in text or ".py in " in text:
        match = _IPY_FRAME.match(text)
        if match:
            return {"file": match.group(1), "line": int(match.group(2)), "function": match.group(3)}
        match = _IPY_CELL.match(text)
        if match:
            return {"file": f"<cell {match.group(1)}>", "line": int(match.group(2)), "function": "<module>"}
        match = _IPY_OLD.match(text)
        if match:
            return {"file": match.group(1), "line": 0, "function": match.group(2)}
    return None


class TracebackAssembler:
    """Fed the lines of ONE rank of one source, in order; collects finished tracebacks."""

    def __init__(self, source: str, rank: int | None, sink: list):
        self.source, self.rank, self.sink = source, rank, sink
        self.current: Traceback | None = None
        self.pending_chain = False
        self.pending_handling = False
        self.pending_remote = False
        self.last_finished: Traceback | None = None
        self.on_open = None  # called with this assembler when a header line opens a traceback (Assemblers)
        self.previous_text = ""

    def feed(self, lineno: int, text: str, seq: int, t: float | None) -> Traceback | None:
        """Returns a traceback when this line completed one."""
        done = self._feed(lineno, text, seq, t)
        self.previous_text = text
        return done

    @property
    def open(self) -> bool:
        return self.current is not None

    def _feed(self, lineno: int, text: str, seq: int, t: float | None) -> Traceback | None:
        if HEADER in text:
            self._abandon()
            remote_rank = _RANK_AFTER_HEADER.search(text)  # DCP's per-rank traces: "... last): (RANK 7)"
            self.current = Traceback(
                self.source,
                int(remote_rank.group(1)) if remote_rank else self.rank,
                lineno,
                rank_named=remote_rank is not None,
                seq=seq,
                t=t,
                chained_to_previous=self.pending_chain,
                while_handling=self.pending_chain and self.pending_handling,
                remote=self.pending_remote,
                lead=self.previous_text[:500],
            )
            self.pending_chain = self.pending_handling = self.pending_remote = False
            if self.on_open is not None:
                self.on_open(self)
            return None
        if _CHAIN_CAUSE in text or _CHAIN_DURING in text:
            self._abandon()
            self.pending_chain = True
            self.pending_handling = _CHAIN_DURING in text
            return None
        if "RemoteTraceback" in text:
            self.pending_remote = True
        current = self.current
        if current is None:
            if not (_FRAME.search(text) or _RICH_FRAME.search(text)):
                return None
            # an excerpt that starts inside a traceback: the frames are there, the header is not
            current = self.current = Traceback(
                self.source,
                self.rank,
                lineno,
                seq=seq,
                t=t,
                chained_to_previous=self.pending_chain,
                while_handling=self.pending_chain and self.pending_handling,
                remote=self.pending_remote,
                lead=self.previous_text[:500],
            )
            self.pending_chain = self.pending_handling = self.pending_remote = False
        current.lines_seen += 1
        if current.lines_seen > MAX_BODY:
            self._abandon()
            return None
        frame = parse_frame(text)
        if frame is None and _IPY_CONTEXT.match(text) and current.frames:
            return None  # IPython quotes numbered source lines around each frame ("   2121 ...", "-> 2123 ...")
        if frame is None:
            current.since_frame += 1
            if current.since_frame == 1 and current.frames and "code" not in current.frames[-1]:
                current.frames[-1]["code"] = text.strip()[:300]  # the source line under the frame
            if current.frames and current.since_frame > (30 if "│" in text or "|" in text else 8):
                self._abandon()  # not a traceback body any more: a stray frame-like line, or a cut excerpt
                return None
        if frame is not None:
            current.since_frame = 0
            frame["log_line"] = lineno
            frame["text"] = text.strip()
            if len(current.frames) < 200:
                current.frames.append(frame)
            return None
        if not current.frames:
            # rich boxes and launcher blocks put decorations before the first frame
            parsed = parse_exception_line(text) if current.lines_seen > 1 else None
            if parsed is None:
                return None
        else:
            parsed = parse_exception_line(text)
        if parsed is None:
            return None
        current.exception, current.full_name, current.message = parsed
        current.exc_line, current.exc_text = lineno, text.strip()
        self.current = None
        self.sink.append(current)
        self.last_finished = current
        return current

    def _abandon(self) -> None:
        self.current = None

    def close(self) -> None:
        self._abandon()
