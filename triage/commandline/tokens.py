"""A lossless shell-word tokenizer: every byte of the input lands in a token or a gap.

`tokenize(text)` splits a launch command the way a POSIX shell splits words (quotes,
backslash escapes, `\\`-newline continuations, `#` comments, `;`/`&&`/`||`/`|` operators)
while keeping each token's original text, so that `detokenize(tokenize(text)) == text`
byte for byte. Rewrites replace single tokens and leave every other byte alone.
It never raises: an unterminated quote simply runs to the end of the text.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

OPERATORS = ("&&", "||", ";;", ";", "|", "&")
REDIRECT = re.compile(r"(?:\d*|&)(?:>>|>|<)(?:&\d+|&-)?")  # 2>&1, >>, &>, <


@dataclass
class Token:
    raw: str  # the text exactly as written, quotes included
    value: str  # the word after shell unquoting
    start: int
    is_operator: bool = False

    @property
    def quote(self) -> str:
        """The quote character the token starts with ('"', "'" or '')."""
        return self.raw[0] if self.raw[:1] in ('"', "'") else ""


@dataclass
class TokenLine:
    text: str
    tokens: list[Token] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)  # gaps[i] precedes tokens[i]; gaps[-1] trails

    def render(self) -> str:
        parts = []
        for gap, token in zip(self.gaps, self.tokens, strict=False):
            parts.append(gap)
            parts.append(token.raw)
        parts.append(self.gaps[-1] if self.gaps else "")
        return "".join(parts)


def _read_gap(text: str, i: int) -> int:
    """Skip whitespace, backslash-newline continuations and comments; return the new index."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
        elif ch == "\\" and text[i + 1 : i + 2] == "\n":
            i += 2
        elif ch == "\\" and text[i + 1 : i + 3] == "\r\n":
            i += 3
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        else:
            break
    return i


def _read_word(text: str, i: int) -> tuple[int, str]:
    """Read one shell word from index i; return (end index, unquoted value)."""
    n = len(text)
    value: list[str] = []
    while i < n:
        ch = text[i]
        if ch in " \t\r\n<>" or any(text.startswith(op, i) for op in OPERATORS):
            break
        if ch == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            value.append(text[i + 1 : end])
            i = end + 1
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    if text[i + 1] != "\n":
                        value.append(text[i + 1])
                    i += 2
                else:
                    value.append(text[i])
                    i += 1
            i += 1
        elif ch == "\\":
            if i + 1 < n and text[i + 1] == "\n":  # continuation inside a word joins it
                i += 2
            else:
                value.append(text[i + 1 : i + 2])
                i += 2
        else:
            value.append(ch)
            i += 1
    return min(i, n), "".join(value)


def tokenize(text: str) -> TokenLine:
    line = TokenLine(text=text)
    i, n = 0, len(text)
    gap_start = 0
    while True:
        i = _read_gap(text, i)
        line.gaps.append(text[gap_start:i])
        if i >= n:
            break
        redirect = REDIRECT.match(text, i)
        op = redirect.group(0) if redirect else next((op for op in OPERATORS if text.startswith(op, i)), None)
        if op:
            line.tokens.append(Token(raw=op, value=op, start=i, is_operator=True))
            i += len(op)
        else:
            end, value = _read_word(text, i)
            if end <= i:  # never loop forever on odd input
                end = i + 1
                value = text[i]
            line.tokens.append(Token(raw=text[i:end], value=value, start=i))
            i = end
        gap_start = i
    return line


_SAFE = re.compile(r"^[\w@%+=:,./-]+$")


def quote_like(old_raw: str | None, value: str) -> str:
    """Quote `value` for the shell in the style `old_raw` used (double, single, or none)."""
    style = old_raw[0] if old_raw and old_raw[:1] in ('"', "'") else ""
    if style == '"':
        return '"' + re.sub(r'(["\\$`])', r"\\\1", value) + '"'
    if style == "'" and "'" not in value:
        return "'" + value + "'"
    if value and _SAFE.match(value):
        return value
    return shlex.quote(value)
