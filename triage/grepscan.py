"""The same candidate-line scan as triage.scan, done by GNU grep for big plain files.

Python's regex engine tries an alternation at every byte (~20 MB/s here); `grep -F -f` runs a
multi-literal matcher in C at disk speed. grep only names the candidate lines (number and byte
offset); windows after them (`follow`) and progress samples are read by seeking in the file.
Used only when grep exists and the input is a real file; everything else uses triage.scan.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator

from triage.scan import CHUNK, PROGRESS, PROGRESS_TAIL, WINDOW, rank_key

MIN_SIZE = 16 * 1024 * 1024  # below this the Python scanner is fast enough and needs no process
PARALLEL_MIN = 64 * 1024 * 1024  # from here two grep processes share the file (when two CPUs are free)


def available() -> bool:
    return shutil.which("grep") is not None


class GrepScanner:
    def __init__(self, path: str, literals: list[str], progress: bool = True, pattern=None):
        self.path, self.literals, self.progress = path, literals, progress
        self.pattern = pattern
        self.follow = 0
        self._lines_total: int | None = None
        self._last_line, self._last_end = 0, 0
        self.bytes_total = os.path.getsize(path)
        self.progress_samples: list[tuple[int, bytes]] = []

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        with tempfile.NamedTemporaryFile("w", suffix=".pat", delete=False, encoding="utf-8") as handle:
            # one ERE alternation: GNU grep compiles it to a DFA, about twice as fast as -F with 250 strings
            handle.write("|".join(_ere(literal) for literal in sorted(set(self.literals)) if literal) + "\n")
            pattern_file = handle.name
        last_line, last_end = 0, 0
        try:
            with open(self.path, "rb") as reader:
                for lineno, offset, text, true_length in self._matches(pattern_file):
                    if lineno <= last_line:
                        continue  # already handed out inside a follow window
                    last_line, last_end = lineno, offset + (true_length or len(text)) + 1
                    yield lineno, self._window(text)
                    if self.follow > 0:
                        reader.seek(last_end)
                        while self.follow > 0:
                            line = reader.readline(4 * WINDOW)
                            if not line:
                                break
                            end = reader.tell()
                            if not line.endswith(b"\n"):  # cut a giant line: skip to its end
                                rest_of_line = reader.readline()
                                while rest_of_line and not rest_of_line.endswith(b"\n"):
                                    rest_of_line = reader.readline(CHUNK)
                                end = reader.tell()
                            self.follow -= 1
                            last_line += 1
                            last_end = end
                            yield last_line, line.rstrip(b"\r\n")[: 2 * WINDOW]
                self._last_line, self._last_end = last_line, last_end
        finally:
            os.unlink(pattern_file)
        if self.progress:
            self._sample_progress()

    def _matches(self, pattern_file: str) -> Iterator[tuple[int, int, bytes, int | None]]:
        """(line number, byte offset, text, true length) of every candidate line, in file order.

        A big file is cut at a newline near its middle and the halves are searched by two grep
        processes at once (the second reads the file from the cut; its numbers are shifted back)."""
        command = ["grep", "-a", "-b", "-n", "-E", "-f", pattern_file]
        env = dict(os.environ, LC_ALL="C")
        cut = self._cut()
        if cut is None:
            process = subprocess.Popen(
                command + [self.path], stdout=subprocess.PIPE, env=env, bufsize=1 << 20
            )
            try:
                yield from self._parsed(process.stdout, 0, 0)
            finally:
                process.stdout.close()
                process.wait()
            return
        # the first half ends with a sentinel line that only its grep looks for: its line number
        # tells how many lines the first half has, so the second half's numbers can be shifted
        sentinel = "triage-cut-" + uuid.uuid4().hex
        first = subprocess.Popen(
            command + ["-e", sentinel],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            bufsize=1 << 20,
        )
        feeder = threading.Thread(
            target=_send_range,
            args=(self.path, cut, first.stdin, ("\n" + sentinel + "\n").encode()),
            daemon=True,
        )
        feeder.start()
        with open(self.path, "rb") as tail:
            tail.seek(cut)
            second = subprocess.Popen(command, stdin=tail, stdout=subprocess.PIPE, env=env, bufsize=1 << 20)
        try:
            marker = sentinel.encode()
            lines_before_cut = None
            for item in self._parsed(first.stdout, 0, 0):
                if item[2] == marker and item[1] >= cut:
                    lines_before_cut = item[0] - 2  # the sentinel follows an extra newline
                    continue
                yield item
            if lines_before_cut is None:  # the feeder failed: count the first half here
                with open(self.path, "rb") as head:
                    lines_before_cut = _count_newlines(head, cut)
            yield from self._parsed(second.stdout, lines_before_cut, cut)
        finally:
            for process in (first, second):
                process.stdout.close()
                if process.poll() is None:
                    process.kill()
                process.wait()
            feeder.join(timeout=5)

    def _parsed(self, stdout, line_shift: int, offset_shift: int):
        for raw, true_length in self._output_lines(stdout):
            lineno_text, _, rest = raw.partition(b":")
            offset_text, _, text = rest.partition(b":")
            try:
                lineno, offset = int(lineno_text), int(offset_text)
            except ValueError:
                continue
            yield lineno + line_shift, offset + offset_shift, text.rstrip(b"\n"), true_length

    def _cut(self) -> int | None:
        """A byte offset just after a newline near the middle, when two searches pay off; else None."""
        if self.bytes_total < PARALLEL_MIN or _cpus() < 2:
            return None
        with open(self.path, "rb") as reader:
            reader.seek(self.bytes_total // 2)
            block = reader.read(1 << 20)
        newline = block.find(b"\n")
        if newline < 0:
            return None  # a giant line across the middle: one search
        cut = self.bytes_total // 2 + newline + 1
        return cut if cut < self.bytes_total else None

    @property
    def lines_total(self) -> int:
        """Counted only when asked (it means reading the rest of the file after the last candidate)."""
        if self._lines_total is None:
            with open(self.path, "rb") as reader:
                self._lines_total = self._last_line + _count_lines_from(
                    reader, self._last_end, self.bytes_total
                )
        return self._lines_total

    def _output_lines(self, stdout) -> Iterator[tuple[bytes, int | None]]:
        """grep's output lines, with a giant matched line reduced to its head and a window around a literal
        (a gigabyte without a newline must not become one gigabyte in memory)."""
        limit = 1024 * 1024
        while True:
            raw = stdout.readline(limit)
            if not raw:
                return
            if raw.endswith(b"\n"):
                yield raw, None
                continue
            head, window, piece, length = raw[:64], None, raw, len(raw)
            while True:
                if window is None:
                    found = self._pattern().search(piece)
                    if found is not None:
                        window = piece[max(0, found.start() - WINDOW) : found.start() + WINDOW]
                if piece.endswith(b"\n"):
                    break
                piece = stdout.readline(limit)
                if not piece:
                    break
                length += len(piece)
            prefix, _, rest = head.partition(b":")
            offset, _, _ = rest.partition(b":")
            # the true length of the line in the file, so a follow window starts on the next line
            line_length = length - (len(prefix) + len(offset) + 2) - (1 if piece.endswith(b"\n") else 0)
            yield prefix + b":" + offset + b":" + (window or b"") + b"\n", line_length

    def _pattern(self):
        if self.pattern is None:
            from triage.scan import compile_literals

            self.pattern = compile_literals(self.literals)
        return self.pattern

    def _window(self, text: bytes) -> bytes:
        """A giant line is cut to a window around the literal that made it a candidate."""
        if len(text) <= 4 * WINDOW:
            return text
        found = self._pattern().search(text)
        if found is None:
            return text[: 2 * WINDOW]
        return text[max(0, found.start() - WINDOW) : found.start() + WINDOW]

    def _sample_progress(self) -> None:
        size = self.bytes_total
        if not size:
            return
        with open(self.path, "rb") as reader:
            head = reader.read(PROGRESS_TAIL)
            match = PROGRESS.search(head)
            if match:
                start = head.rfind(b"\n", 0, match.start()) + 1
                end = head.find(b"\n", start)
                self.progress_samples.append(
                    (head.count(b"\n", 0, start) + 1, head[start : end if end >= 0 else None])
                )
            for region_end in list(range(CHUNK, size, CHUNK)) + [size]:
                begin = max(0, region_end - PROGRESS_TAIL)
                reader.seek(begin)
                window = reader.read(region_end - begin)
                first = window.find(b"\n") + 1 if begin else 0
                latest = _latest_progress(window, first)
                for start in sorted(latest.values()):
                    end = window.find(b"\n", start)
                    # the line number is interpolated from the byte offset: good enough for the timeline
                    lines_per_byte = self._last_line / self._last_end if self._last_end else 0.0
                    estimate = int(lines_per_byte * (begin + start)) + 1
                    if region_end == size and b"NCCL INFO" in window[start : start + 400]:
                        estimate = self.lines_total - window.count(b"\n", start)
                    self.progress_samples.append(
                        (estimate, window[start : end if end >= 0 else None][: 2 * WINDOW])
                    )
        if len(self.progress_samples) > 4096:
            self.progress_samples = self.progress_samples[:1] + self.progress_samples[-2048:]


_MARKERS = (b"it/s]", b"s/it]", b"'loss': ", b"NCCL INFO")


def _latest_progress(window: bytes, first: int) -> dict[bytes, int]:
    """{rank prefix: start of its last progress line} in the window; plain substring tests per line
    instead of a regex over the whole window (Python's regex alternation crawls at ~20 MB/s).
    Read from the end; after 256 progress lines in a row from ranks already seen, earlier lines
    cannot add a rank that is still printing progress."""
    latest: dict[bytes, int] = {}
    end = len(window)
    stale = 0
    while end > first and stale < 256:
        start = window.rfind(b"\n", first, end - 1) + 1
        if start <= first:
            start = first
        line = window[start:end]
        end = start
        if (
            b"it/s]" in line
            or b"s/it]" in line
            or b"'loss': " in line
            or b"NCCL INFO" in line
            or (b"loss" in line and PROGRESS.search(line) is not None)
        ):
            key = rank_key(window, start)
            if key in latest:
                stale += 1
            else:
                latest[key] = start
                stale = 0
    return latest


def _ere(literal: str) -> str:
    return "".join("\\" + char if char in ".[]()*+?{}|^$\\" else char for char in literal)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _send_range(path: str, end: int, pipe, trailer: bytes = b"") -> None:
    """Feed bytes [0, end) of the file, then the trailer, to a grep's stdin (a kernel-side copy where
    the OS allows it); the trailer is sent only when the whole range went through."""
    try:
        with open(path, "rb") as source:
            offset = 0
            out = pipe.fileno()
            while offset < end:
                try:
                    sent = os.sendfile(out, source.fileno(), offset, min(end - offset, 1 << 24))
                except (AttributeError, OSError) as error:
                    if isinstance(error, BrokenPipeError):
                        return
                    source.seek(offset)
                    data = source.read(min(end - offset, 1 << 20))
                    if not data:
                        return
                    pipe.write(data)
                    sent = len(data)
                if sent == 0:
                    return
                offset += sent
            pipe.write(trailer)
            pipe.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def _count_newlines(reader, end: int) -> int:
    reader.seek(0)
    count, left = 0, end
    while left > 0:
        block = reader.read(min(CHUNK, left))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count


def _count_lines_from(reader, offset: int, size: int) -> int:
    reader.seek(offset)
    count, last = 0, b""
    while True:
        block = reader.read(CHUNK)
        if not block:
            break
        count += block.count(b"\n")
        last = block[-1:]
    if offset < size and last and last != b"\n":
        count += 1
    return count
