"""Rank attribution from line prefixes.

Styles: `[rankN]:` (torch), `[defaultN]:` (torchrun --tee), both together, Slurm `srun -l`
(`N: `), mpirun `[1,N]<stdout>:`, DeepSpeed/pdsh `host: ` (a node, not a rank), and a rank naming
itself (Lightning `[rank: N]`, a script's `Rank N:` / `[Rank N]`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from triage import decorations

_TORCH = re.compile(r"\[(?:rank|default|[A-Za-z_]{1,20}?)(\d{1,6})\]:\s?")
# mpirun [1,N], horovodrun --gloo [N], SageMaker's mpirun [1,mpirank:N,algo-M]
_MPI = re.compile(r"\[(?:\d{1,4},)?(?:mpirank:)?(\d{1,6})(?:,[\w.\-]{1,60})?\]<(?:stdout|stderr)>:\s?")
_MIDLINE = re.compile(r"\[rank(\d{1,6})\]:\s?")
_SRUN = re.compile(r"\s{0,4}(\d{1,6}): ")
# a rank naming itself at the start of its line: Lightning's "[rank: 1] ", a script's "Rank 3: ",
# "[Rank 3] ", "RANK=3 | ", "rank3: " (never a hostname: the word is "rank")
_SELF = re.compile(
    r"(?:\[\s?rank[:=\s]\s?(\d{1,6})(?:\s?/\s?\d{1,6})?\s?\]:?|rank[\s_=]?(\d{1,6})\s?(?::|\|)|"
    r"\[rank(\d{1,6})\](?=\s))\s?", re.I
)  # "[rank: 1]", "[Rank 3]", "[rank 13/16]", "Rank 3:", "rank3 |", a script's own "[rank0] step 2"
_HOST = re.compile(
    r"((?:localhost|[a-z0-9][a-z0-9\-]{0,40}\d[a-z0-9\-]{0,20}(?:\.[a-z0-9\-]{1,40}){0,6}|"
    # a name without digits, in parts joined by hyphens (pdsh's "node-b: ", "gpu-west-a: ")
    r"[a-z][a-z0-9]{1,20}(?:-[a-z0-9]{1,20}){1,3}(?:\.[a-z0-9\-]{1,40}){0,6}|"
    r"\d{1,3}(?:\.\d{1,3}){3})): "
)
# a mention inside the message: "[Rank 5] Watchdog", "rank 3 ", "Rank 0:" (weaker, used by rules)
MENTION = re.compile(
    r"\[\s?[Rr]ank\s?(\d{1,6})\s?\]|(?:^|^[\w.]{1,80}(?:Error|Exception): )[Rr]ank[ _=:]{1,2}(\d{1,6})\b"
)


# The one rank-prefix grammar, for code that reads stored lines (pages, the log viewer): a line's
# rank prefix anywhere near its start, in the same forms split_prefix() peels.
LINE_RANK = re.compile(
    r"\[(?:rank|default)(\d{1,6})\]:?|\[(?:\d{1,4},)?(\d{1,6})\]<(?:stdout|stderr)>:|^\s{0,4}(\d{1,6}): "
)


def rank_in_line(text: str) -> int | None:
    """The rank a stored log line's prefix names, or None."""
    match = LINE_RANK.search(text)
    if not match:
        return None
    return int(next(group for group in match.groups() if group is not None))


def strip_rank_prefixes(text: str) -> str:
    return LINE_RANK.sub("", text)


def rank_line_pattern(rank: int) -> re.Pattern:
    """Lines of one rank in a combined log: any prefix form above, or a rank named in the text."""
    n = int(rank)
    return re.compile(
        rf"\[(?:default|rank){n}\]|\[(?:\d{{1,4}},)?{n}\]<|^\s{{0,4}}{n}: |\brank ?{n}\b", re.IGNORECASE
    )


@dataclass(frozen=True)
class Prefixed:
    rank: int | None
    host: str | None
    text: str
    style: str | None
    local: bool = False  # torchrun --tee's "[defaultN]:" numbers the node's own processes, not the world's


_LEAD_CHARS = frozenset("0123456789[>(<|")


def split_prefix(line: str) -> Prefixed:
    """Peel rank/host prefixes off a cleaned line (several may stack: "3: [rank3]: ..."). A collector's
    decorations before them (a timestamp, a quote, a pod tag: "2024-05-06T07:08:09Z 6: [rank6]: ...") are
    looked through, and kept in the text for the timestamp reader and the exception layer."""
    found = _split(line, midline=False)
    if found.rank is None and line[:1] == " " and line.lstrip()[:1] == "[":
        inner = _split(line.lstrip(), midline=False)  # a block indented as a whole (a Markdown code block)
        if inner.rank is not None:
            return inner
    if found.rank is not None or not line:
        return found
    if line[0] not in _LEAD_CHARS:
        # a collector's lead that starts with a letter (syslog's "Nov 03 10:00:00 host prog[pid]: ", compose's
        # "trainer-1  | ") before pdsh's "host: " or srun's "N: "
        peeled = decorations.without_collector_lead(line)
        if peeled is not line:
            inner = _split(peeled, midline=False)
            if inner.rank is not None or inner.host is not None:
                return Prefixed(rank=inner.rank, host=inner.host, text=line[: len(line) - len(peeled)] + inner.text,
                                style=inner.style, local=inner.local)
        return _split(line)
    core = decorations.core(line)
    if core is line or not line.endswith(core):
        return _split(line)
    inner = _split(core)
    if inner.rank is None and inner.host is None:
        return _split(line)
    lead = line[: len(line) - len(core)]
    return Prefixed(rank=inner.rank, host=inner.host or found.host, text=lead + inner.text, style=inner.style,
                    local=inner.local)


def _split(line: str, midline: bool = True) -> Prefixed:
    host = None
    style = None
    rank = None
    text = line
    match = _SELF.match(text)
    if match:
        rank, text, style = int(match.group(1) or match.group(2) or match.group(3)), text[match.end() :], "self"
        return Prefixed(rank=rank, host=host, text=text, style=style)
    match = _HOST.match(text)
    # (a number alone is srun's task label "11: ", padded " 8: " below ten: never a host)
    if match and not text.startswith(("http", "https")) and not match.group(1).isdigit():
        host, text, style = match.group(1), text[match.end() :], "host"
    match = _SRUN.match(text)  # (pdsh's "host: " may stand before srun's "N: ")
    if match:
        rank, text, style = int(match.group(1)), text[match.end() :], "srun"
    local = False
    for _ in range(3):  # "[default1]:[rank1]: ..." carries two prefixes
        match = _TORCH.match(text)
        if match:
            rank = int(match.group(1))
            local = text.startswith("[default")
            text = text[match.end() :]
            style = "torch"
            continue
        match = _MPI.match(text)
        if match:
            rank, text, style, local = int(match.group(1)), text[match.end() :], "mpirun", False
            continue
        break
    if midline and rank is None and "[rank" in text:
        # a progress bar without a newline, then "[rank5]:[E602 ...": the rank's line starts mid-line
        match = _MIDLINE.search(text)
        if match:
            rank, text, style, local = int(match.group(1)), text[match.end() :], "torch", False
    return Prefixed(rank=rank, host=host, text=text, style=style, local=local)


_IN_DECORATIONS = re.compile(r"\[\s?rank[:=\s]?\s?(\d{1,6})(?:\s?/\s?\d{1,6})?\s?\]|\brank[=:\s_]?(\d{1,6})\b", re.I)


def rank_in_decorations(head: str) -> int | None:
    """A rank named among what a logger printed before the message ("2024-05-01 10:00 [RANK 2] ERROR")."""
    if "ank" not in head and "ANK" not in head:
        return None
    match = _IN_DECORATIONS.search(head)
    return int(match.group(1) or match.group(2)) if match else None


def mentioned_rank(text: str) -> int | None:
    match = MENTION.search(text)
    if not match:
        return None
    return int(match.group(1) or match.group(2))
