"""Undo a terminal's hard wrapping: a log copied from a console that cut every long line at its width.

A console window (Windows' 120 columns, a tmux pane, a web terminal) breaks each line longer than its
width into pieces of exactly that width, so a "[rank2]: RuntimeError: ..." line becomes a prefixed head
and an unprefixed tail. Such a file shows its width plainly: no line is longer than W, and many lines of
different content are exactly W long. Lines of width W are joined with the line after them.

Lines that merely share the longest length are not a width: eight ranks printing the same long line,
a template repeated with other names ("size mismatch for ...q_proj..." / "...v_proj..."), a row of "=",
a table's or a rich traceback box's rows. They read alike once their words and digits are ignored, or
they start or end with a table's border, so they count once or not at all. A terminal that pads each
piece with spaces up to the width shows it too: a line of width W that ends in two spaces is complete.
"""

from __future__ import annotations

import re

MAX_UNWRAP = 4 * 1024 * 1024  # bytes: a pasted console, not a job's full log
MIN_WIDTH = 79
MIN_DISTINCT = 3  # distinct lines of exactly the width
_WORDS = re.compile(rb"[A-Za-z]+|\d+")
_BORDERS = ("|", "+", "\u2502", "\u2503", "\u2551", "\u256d", "\u2570", "\u256e", "\u256f", "\u250c", "\u2514")


def _widths(lines: list[bytes]) -> list[int]:
    """Each line's width in characters, as a terminal counts them (a trailing \\r not counted)."""
    return [len(line.rstrip(b"\r").decode("utf-8", "replace")) for line in lines]


def wrap_width(lines: list[bytes], widths: list[int] | None = None) -> int | None:
    """The width W a console wrapped these lines at, or None when they were not wrapped."""
    widths = _widths(lines) if widths is None else widths
    longest = max(widths, default=0)
    if longest < MIN_WIDTH or widths.count(longest) < MIN_DISTINCT:
        return None
    shapes = set()
    for line, width in zip(lines, widths, strict=True):
        if width != longest:
            continue
        text = line.rstrip(b"\r").decode("utf-8", "replace")
        if text.strip().startswith(_BORDERS) or text.rstrip().endswith(_BORDERS):
            continue
        shape = _WORDS.sub(b"a", line.rstrip(b"\r"))
        if len(set(shape.strip())) > 1:  # not a rule of one character
            shapes.add(shape)
    return longest if len(shapes) >= MIN_DISTINCT else None


def unwrap(data: bytes) -> bytes | None:
    """The text with the console's wrapping undone, or None when it shows no wrapping."""
    lines = data.split(b"\n")
    widths = _widths(lines)
    width = wrap_width(lines, widths)
    if width is None:
        return None
    out: list[bytes] = []
    carry = b""
    for line, size in zip(lines, widths, strict=True):
        piece = line.rstrip(b"\r")
        if size == width and not piece.endswith(b"  "):
            carry += piece
            continue
        out.append((carry + piece).rstrip(b" ") if carry else piece)
        carry = b""
    if carry:
        out.append(carry)
    return b"\n".join(out)
