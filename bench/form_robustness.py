"""How much a log collector's lead changes the engine's answer.

Every labelled case of the repository's own sets (and `--corpus DIR`, when given) is diagnosed as it is,
then again with one lead glued before every line of every log (`kubectl logs --timestamps`, a quoted
paste, `kubectl logs --prefix`'s pod tag, a Python logging format, `pdsh`'s host) or with the whole text
rewritten (terminal colours, CRLF line ends, HTML escaping, a Markdown indent, hard-wrapped long lines). The baseline is the
untouched case in the same run; the figure is the share of cases whose (category, root exception,
failing rank) does not move.

    python bench/form_robustness.py [--corpus ../shared/corpus] [--only kubectl,quoted]
"""

from __future__ import annotations

import argparse
import html
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.pipeline import diagnose  # noqa: E402
from triage.scoring import CONFIG_FILES, NOT_LOGS, find_cases  # noqa: E402

SETS = [ROOT / "tests" / "fixtures" / name for name in ("cpu_runs", "cpu_blind", "cpu_blind2", "cpu_blind3")] + [
    ROOT / "tests" / "triage" / "fixtures" / name for name in ("variants", "blind", "blind5", "blind8", "blind10")
]
LEADS = {
    "kubectl-timestamps": lambda line: "2026-05-06T07:08:09.123456789Z " + line,
    "quoted": lambda line: "> " + line,
    "pod-tag": lambda line: "[pod/trainer-0/main] " + line,
    "logging-format": lambda line: "2026-05-06 07:08:09,123 - ERROR - " + line,
    "pdsh-host": lambda line: "node-a7: " + line,
}


def _wrap(line: str, width: int = 120) -> str:
    return "\n".join(line[at:at + width] for at in range(0, len(line), width)) if len(line) > width else line


# Whole-text changes a log meets on its way to a user: a terminal's colours, Windows line ends, a web page's
# escaping, a Markdown code block's indent, a terminal that hard-wraps long lines.
REWRITES = {
    "ansi-colour": lambda text: "\n".join(f"\x1b[0;31m{line}\x1b[0m" if line else line for line in text.split("\n")),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "html-escaped": lambda text: html.escape(text),
    "markdown-indent": lambda text: "\n".join("    " + line for line in text.split("\n")),
    "wrapped-120": lambda text: "\n".join(_wrap(line) for line in text.split("\n")),
}


def answer(case: Path, lead=None) -> tuple:
    work = Path(tempfile.mkdtemp(prefix="form-"))
    try:
        inputs = []
        for path in sorted(case.iterdir()):
            if path.name in NOT_LOGS or path.name in CONFIG_FILES:
                continue
            target = work / path.name
            if path.is_dir():
                shutil.copytree(path, target)
            else:
                shutil.copy(path, target)
            inputs.append(target)
            if lead is None:
                continue
            for file in [target] if target.is_file() else [f for f in target.rglob("*") if f.is_file()]:
                try:
                    text = file.read_text()
                except (UnicodeDecodeError, OSError):
                    continue
                if text.lstrip()[:1] in ("{", "[") or file.suffix == ".csv":
                    continue  # a structured export is not a stream of printed lines
                file.write_text(REWRITES[lead](text) if isinstance(lead, str)
                                else "\n".join(lead(line) for line in text.split("\n")), newline="")
        command = (case / "command.txt").read_text() if (case / "command.txt").is_file() else None
        result = diagnose(inputs, command=command)
        return result.category, result.root_cause.exception if result.root_cause else None, result.failing_rank
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", help="also a labelled corpus folder")
    parser.add_argument("--only", help="comma-separated leads")
    args = parser.parse_args(argv)
    every = {**LEADS, **{name: name for name in REWRITES}}
    leads = {name: every[name] for name in (args.only.split(",") if args.only else every)}
    cases = [case for folder in SETS + ([Path(args.corpus)] if args.corpus else []) for case in find_cases(folder)]
    started = time.perf_counter()
    baseline = {case: answer(case) for case in cases}
    print(f"{len(cases)} cases; baseline: each case as it is, in this run")
    for name, lead in leads.items():
        moved = [case for case in cases if answer(case, lead) != baseline[case]]
        share = 100 * (len(cases) - len(moved)) / len(cases)
        print(f"{name:20s} unchanged {len(cases) - len(moved)}/{len(cases)} ({share:.1f}%)"
              + (f"; moved: {', '.join(case.name for case in moved[:6])}" if moved else ""))
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
