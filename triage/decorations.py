"""Peel the decorations that loggers, job runners and terminals glue in front of a log line.

Rank and host prefixes are read by `triage.ranks`; what is left may still start with a clock
time (`16:49:33.632torch.cuda.OutOfMemoryError: ...`, glued), one or two ISO timestamps, a log
level (`[ERROR]`, `ERROR:`, `| ERROR |`, `- INFO -`), a logger name (`root:`, `__main__:main:12 -`),
bracketed runner tags (`[Driver]`, `[step (1234)]`, `[3f2a...]`), a runner's task name (`job/0 `), a host name
before a rank tag (`gpu-n3 [r6] `), a Ray actor tag
(`(RayTrainWorker pid=123, ip=10.0.0.2)`) or a tqdm bar that did not end its line. The exception
layer reads the *core* of the line, so an exception line is recognised whatever is glued before it;
rules keep searching the whole line.
"""

from __future__ import annotations

import re

_ISO = r"\[?\d{4}[-/]\d\d[-/]\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d| ?UTC)?\]?"
_CLOCK = r"\[?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]?"
_LEVEL = r"(?:CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG|TRACE|NOTICE|SEVERE|error|warning|info|debug)"
# a quoted paste (markdown "> ", e-mail ">> ")
_QUOTE = re.compile(r"(?:>[ \t]?)+(?=[ \t]*\S)")
# timestamps: ISO (possibly twice, tab-separated), syslog-style, a bare clock glued to the text
_TIMESTAMP = re.compile(rf"{_ISO}\s*(?:[|:,\-]\s+|[|:,]|(?=\S))?\s*")
# container runtime (CRI) log lines: "<timestamp> stdout F "
_CRI = re.compile(r"(?:stdout|stderr) [FP] ")
# syslog / journald: "Nov 03 10:00:00 gpu-node-07 python3[41822]: " (the host, then the program and its pid)
_SYSLOG = re.compile(r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d\s+(?:\S+\s+)?"
                     r"(?:[\w.\-/@]{1,60}\[\d{1,9}\]:\s)?")
# `aws logs tail`: "<ISO timestamp> <log stream> " where the stream is a path of names ("job/algo-1-1764000000")
_CLOUD_STREAM = re.compile(rf"{_ISO}\s+[A-Za-z0-9][\w.\-]*(?:/[\w.\-]+)+\s+(?=\S)")
_CLOCK_STEP = re.compile(rf"{_CLOCK}\s*(?:[|\-]\s+)?")
# levels: "[ERROR] ", "ERROR: ", "| ERROR    | ", "- INFO - ", "ERROR:root:", "INFO ", "<ERROR>",
# then perhaps the logger's name: "- INFO - datasets.builder - "
_LEVEL_STEP = re.compile(
    rf"[|\-]?\s*[\[<]?{_LEVEL}[\]>]?\s*(?:\|\s*|-\s+|:(?:[\w.]+:)?\s*|\s+)(?:[\w.]{{2,60}} - (?=\S))?"
)
# `kubectl logs --prefix`: "[pod/name/container] "
_POD_TAG = re.compile(r"\[pod/[\w.\-]{1,120}/[\w.\-]{1,60}\]\s")
_STEPS = [
    _QUOTE,
    _CLOUD_STREAM,
    _TIMESTAMP,
    _CRI,
    _SYSLOG,
    _CLOCK_STEP,
    # a month-day stamp without the year: "11-27 21:42:03 " (vLLM's logger: "ERROR 11-27 21:42:03 [core.py:586] ")
    re.compile(r"\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,9})?\s+(?=\S)"),
    # glog: "E1130 10:24:02.118000 140211 file.py:897] "
    re.compile(r"[EWIF]\d{3,4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w./\-]+:\d+\]\s*"),
    # HF logging "[WARNING|file.py:4101] 2024-... >> "
    re.compile(r"\[[A-Z]+\|[\w.]+:\d+\]\s*"),
    _LEVEL_STEP,
    # loguru "__main__:main:12 - "
    re.compile(r">>\s+"),
    re.compile(r"[\w.<>]+:[\w<>]+:\d+\s+-\s+"),
    # pipe-separated columns of job runners: "| train-7b | "
    re.compile(r"\|?\s*[\w.\-:]{1,40}\s+\|\s*"),
    # runner tags in brackets: "[Driver] ", "[step (1234)] ", "[9f1c2e...] " (no nested brackets)
    re.compile(r"(?!\[(?:rank|default)\d+\])(?!\[[\d,]{1,12}\]<)\[[^\[\]\n]{1,60}\]\s*(?=\S)"),  # rank prefixes stay
    # a job runner's task or replica name: "llama_sft/0 ", "trainer-job/12 " (NeMo-Run, batch runners)
    re.compile(r"[A-Za-z][\w.\-]{0,60}/\d{1,4}\s+(?=\S)"),
    # a host name before a rank tag: "gpu-n3 [r6] ", "node07 [rank 3] " (per-node log collectors)
    re.compile(r"[A-Za-z][\w.\-]{0,60}\s+(?=\[(?:r|rank|default|worker|task|proc|gpu)?[ :=]?\d{1,5}\])",
               re.IGNORECASE),
    # a container, trial or request id: "3e9a7f21 " (hex, with a digit and a letter)
    re.compile(r"(?=[0-9a-f]{0,63}\d)(?=[0-9a-f]{0,63}[a-f])[0-9a-f]{6,64}\s+(?=\S)"),
    # a column bar after the tags: "[rank=3] || torch.OutOfMemoryError" (Determined's trial logs)
    re.compile(r"\|{1,2}\s+(?=\S)"),
    # Ray actors and workers: "(RayTrainWorker pid=1234, ip=10.1.2.3) ", "(Runner pid=7) ", an actor named with
    # its rank "(MegatronPolicyWorker[rank=13] pid=811291, ip=10.0.2.53) ", vLLM's worker processes with their
    # tensor-parallel rank "(VllmWorker rank=0 pid=3314) ", "(VllmWorker TP1 pid=77) "
    re.compile(r"\((?:[\w.:\-]+(?:\[[\w=:, ]{1,40}\])?\s+)?(?:(?:rank=\d{1,5}|TP\d{1,3}|DP\d{1,3})\s+)?"
               r"pid=\d+(?:,\s*ip=[\w.:\-]+)?\)\s*"),
]
RAY_ACTOR = _STEPS[-1]
# `docker compose logs`: "trainer-1  | ", "proj_trainer_1  | " (the service's replica number, then a bar)
_COMPOSE = re.compile(r"[A-Za-z][\w.\-]{0,62}[-_]\d{1,3}\s+\|\s?")
# what a log collector puts before every line, whatever the program printed: a quote, timestamps, the
# container runtime's stream marker, `kubectl logs --prefix`'s "[pod/name/container] ", a logging level,
# compose's service tag
_COLLECTOR = [_QUOTE, _CLOUD_STREAM, _TIMESTAMP, _CRI, _SYSLOG, _CLOCK_STEP, _LEVEL_STEP, _POD_TAG, _COMPOSE]


def without_collector_lead(text: str) -> str:
    """The line as the program printed it: a collector's timestamps, quote marks, pod tag or level peeled
    (launcher blocks are read from here: "2024-05-06T07:08:09Z   exitcode  : -9 (pid: 41)")."""
    if not text or not (text[0].isdigit() or text[0] in "[>sJFMAOND" or _COMPOSE.match(text)):
        return text
    out = text
    for _ in range(4):
        for step in _COLLECTOR:
            match = step.match(out)
            if match and 0 < match.end() < len(out):
                out = out[match.end() :]
                break
        else:
            break
    return out


# tqdm's right-hand block: "[00:01<?, ?it/s]" or "[29:59, 1466.92 examples/s]"
_BAR_END = re.compile(r"\[(?:\d+:)?\d+:\d+(?:<[^\[\]]{0,40})?(?:,[^\[\]]{0,60})?\]")
_BAR_HINT = re.compile(r"%\||\d+/\d+ \[|/s\]|it\]")


def strip_progress_bar(text: str) -> str:
    """'Steps: 3%|#  | 1/800 [00:17<3:57, 17.8s/it]ERROR: x' -> 'ERROR: x' (a bar that did not end its line)."""
    if "[" not in text or not _BAR_HINT.search(text):
        return text
    ends = list(_BAR_END.finditer(text))
    last = ends[-1] if ends else None
    if last is None or last.end() >= len(text):
        return text
    rest = text[last.end() :].lstrip()
    return rest or text


def core(text: str) -> str:
    """The line without leading decorations; a line with none comes back as the same object (callers
    test `is` to skip a second rule pass), and so does a line that is only decorations."""
    text = strip_progress_bar(text)
    stripped = text.lstrip()
    if not stripped or stripped[0] in "│┃|╭╰" or stripped.startswith(("File ", "Traceback", ">>>")):
        return text
    out = stripped
    for _ in range(8):
        for step in _STEPS:
            match = step.match(out)
            if match and match.end() > 0 and match.end() < len(out):
                out = out[match.end() :]
                break
        else:
            break
    return out if out is not stripped and out.strip() else text
