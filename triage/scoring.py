"""Score the engine against labelled cases: the project's own accuracy yardstick.

A case is a folder holding the logs of one failed job (files, archives, or folders such as a
``torchrun --log-dir`` tree), optionally ``command.txt``, a config (``config.json``,
``config.yaml``, ``ds_config.json``, ...) and ``data_sample.json``, and ``truth.json``, the label
(see docs/diagnosis.md). Each case is diagnosed by running ``PY -m triage diagnose --json`` in a
fresh process, exactly as a scheduler would, and the printed JSON is compared with the label:

- ``category``: the category is the labelled one;
- ``exception``: the root exception's short class name (``torch.distributed.DistNetworkError``
  reads as ``DistNetworkError``) is the labelled one, or both are absent;
- ``message``: the root message holds the labelled phrase (case-insensitive);
- ``rank``: the failing rank is the labelled one (only where the label names a rank);
- ``fix_any`` / ``fix_first``: some fix / the first fix is of a labelled kind.

``exception`` and ``message`` are not scored where the label says the exception line was cut from
the log (``"evidence_in_log": false``). A case whose run crashes or prints no JSON scores as an
empty diagnosis. ``in_process=True`` diagnoses each case in this process through the same argument
handling as the command (the test suite's way: the same answers without a process start per case).

    python -m triage.scoring CORPUS_DIR [--python PY] [--cwd DIR] [--jobs N] [--verbose] [--check]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

# Files of a case that are not logs: the label, the command, the data sample, notes, configs.
NOT_LOGS = frozenset({"truth.json", "command.txt", "data_sample.json", "README.md"})
CONFIG_FILES = ("config.json", "config.yaml", "config.yml", "ds_config.json", "accelerate.yaml")

MARKS = ("category", "exception", "message", "rank", "fix_any", "fix_first")
# The bars the engine must clear on every set it is scored on (tests and `make accuracy`).
BARS = {"category": 0.90, "exception": 0.90, "rank": 0.90, "fix_any": 0.90, "fix_first": 0.75}


def find_cases(corpus: Path | str) -> list[Path]:
    """Every folder directly under ``corpus`` that holds a truth.json, in name order."""
    root = Path(corpus)
    return sorted(path for path in root.iterdir() if (path / "truth.json").is_file())


def case_arguments(case: Path) -> list[str]:
    """The ``diagnose`` arguments for one case: every log input, then command, configs, data."""
    inputs = [
        path for path in sorted(case.iterdir())
        if path.is_dir() or (path.name not in NOT_LOGS and path.name not in CONFIG_FILES)
    ]
    arguments = [str(path) for path in inputs]
    if (case / "command.txt").is_file():
        arguments += ["--command-file", str(case / "command.txt")]
    for name in CONFIG_FILES:
        if (case / name).is_file():
            arguments += ["--config", str(case / name)]
    if (case / "data_sample.json").is_file():
        arguments += ["--data", str(case / "data_sample.json")]
    return arguments


def short_exception(name: object) -> str | None:
    """``pkg.mod.SomeError: text`` -> ``SomeError``; nothing -> None."""
    if not name:
        return None
    last = str(name).strip().rsplit(".", 1)[-1]
    return last.split(":", 1)[0].strip() or None


def mark_case(truth: dict, diagnosis: dict) -> dict[str, bool]:
    """The marks one diagnosis earns against its label (only the marks the label allows)."""
    root = diagnosis.get("root_cause") or {}
    marks = {"category": diagnosis.get("category") == truth["category"]}
    if truth.get("evidence_in_log", True):
        marks["exception"] = short_exception(root.get("exception")) == short_exception(truth.get("root_exception"))
        phrase = truth.get("root_message_contains")
        if phrase:
            marks["message"] = phrase.lower() in str(root.get("message") or "").lower()
    if truth.get("failing_rank") is not None:
        marks["rank"] = diagnosis.get("failing_rank") == truth["failing_rank"]
    wanted = truth.get("fix_kinds") or []
    if wanted:
        kinds = [fix.get("kind") for fix in diagnosis.get("fixes") or []]
        marks["fix_any"] = any(kind in wanted for kind in kinds)
        marks["fix_first"] = bool(kinds) and kinds[0] in wanted
    return marks


@dataclass
class CaseResult:
    name: str
    marks: dict[str, bool]
    truth: dict
    diagnosis: dict
    error: str | None = None

    @property
    def missed(self) -> list[str]:
        return [mark for mark, hit in self.marks.items() if not hit]

    def describe(self) -> str:
        root = self.diagnosis.get("root_cause") or {}
        kinds = [fix.get("kind") for fix in self.diagnosis.get("fixes") or []][:3]
        return (f"{self.name}: missed {','.join(self.missed)} | want {self.truth['category']}/"
                f"{self.truth.get('root_exception')}/rank {self.truth.get('failing_rank')} "
                f"fix {self.truth.get('fix_kinds')} | got {self.diagnosis.get('category')}/"
                f"{root.get('exception')}/rank {self.diagnosis.get('failing_rank')} fix {kinds}")


@dataclass
class Score:
    corpus: str
    results: list[CaseResult] = field(default_factory=list)
    slowest_s: float = 0.0

    def counts(self, mark: str) -> tuple[int, int]:
        """(hits, scored) for one mark."""
        scored = [result.marks[mark] for result in self.results if mark in result.marks]
        return sum(scored), len(scored)

    def rate(self, mark: str) -> float | None:
        hits, scored = self.counts(mark)
        return hits / scored if scored else None

    def rates(self) -> dict[str, float]:
        return {mark: rate for mark in MARKS if (rate := self.rate(mark)) is not None}

    def below(self, bars: dict[str, float] = BARS) -> dict[str, tuple[float, float]]:
        """Marks under their bar: {mark: (rate, bar)}. A set without cases is below every bar."""
        if not self.results:
            return {mark: (0.0, bar) for mark, bar in bars.items()}
        return {mark: (rate, bar) for mark, bar in bars.items()
                if (rate := self.rate(mark)) is not None and rate < bar}

    def summary(self) -> str:
        parts = []
        for mark in MARKS:
            hits, scored = self.counts(mark)
            if scored:
                parts.append(f"{mark} {hits}/{scored} ({hits / scored:.0%})")
        return "; ".join(parts)

    @property
    def errors(self) -> list[str]:
        return [f"{result.name}: no diagnosis ({result.error})" for result in self.results if result.error]


def diagnose_case(case: Path, *, python: str = sys.executable, cwd: Path | str | None = None,
                  timeout: float = 60) -> tuple[dict, str | None]:
    """Run ``python -m triage diagnose --json`` on one case: (diagnosis, error or None)."""
    command = [python, "-m", "triage", "diagnose", "--json", *case_arguments(case.resolve())]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return {}, f"no answer in {timeout:.0f} s"
    try:
        diagnosis = json.loads(proc.stdout)
    except ValueError:
        first = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {}, f"exit {proc.returncode}: {first}"
    if not isinstance(diagnosis, dict):
        return {}, "the output is not a JSON object"
    return diagnosis, None


def diagnose_in_process(case: Path) -> tuple[dict, str | None]:
    """What ``diagnose_case`` prints, computed here: the command's own argument handling, then the engine."""
    from triage.cli import build_parser, diagnose_arguments
    from triage.errors import UnusableInput

    try:
        args = build_parser().parse_args(["diagnose", "--json", *case_arguments(case.resolve())])
    except SystemExit as exc:  # the command would exit here too (no log to read): no diagnosis
        return {}, f"exit {exc.code}: the arguments were refused"
    try:
        return json.loads(json.dumps(diagnose_arguments(args).to_dict(), ensure_ascii=False)), None
    except (UnusableInput, OSError, MemoryError) as exc:
        return {}, f"unusable input: {exc}"


def score_corpus(corpus: Path | str, *, python: str = sys.executable, cwd: Path | str | None = None,
                 timeout: float = 60, jobs: int = 1, in_process: bool = False) -> Score:
    """Diagnose and mark every case under ``corpus``, ``jobs`` processes at a time.

    ``cwd`` is where ``-m triage`` is looked up first: another implementation (a baseline) is
    scored by running from its folder.
    """

    def one(case: Path) -> tuple[CaseResult, float]:
        truth = json.loads((case / "truth.json").read_text(encoding="utf-8"))
        started = time.perf_counter()
        if in_process:
            diagnosis, error = diagnose_in_process(case)
        else:
            diagnosis, error = diagnose_case(case, python=python, cwd=cwd, timeout=timeout)
        elapsed = time.perf_counter() - started
        return CaseResult(case.name, mark_case(truth, diagnosis), truth, diagnosis, error), elapsed

    score = Score(corpus=str(corpus))
    # threads only wait on processes; in-process cases run one at a time (the engine holds the GIL anyway)
    with ThreadPoolExecutor(max_workers=1 if in_process else max(1, jobs)) as pool:
        for result, elapsed in pool.map(one, find_cases(corpus)):
            score.results.append(result)
            score.slowest_s = max(score.slowest_s, elapsed)
    return score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m triage.scoring", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs -m triage")
    parser.add_argument("--cwd", help="run -m triage from this folder (e.g. another implementation)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per case")
    parser.add_argument("--jobs", type=int, default=1, help="cases diagnosed at once")
    parser.add_argument("--verbose", action="store_true", help="print every case that missed a mark")
    parser.add_argument("--check", action="store_true", help="exit 1 when a mark is under its bar")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        sys.stderr.write(f"triage.scoring: no corpus at {args.corpus}\n")
        return 2
    score = score_corpus(args.corpus, python=args.python, cwd=args.cwd, timeout=args.timeout, jobs=args.jobs)
    if args.verbose:
        for result in score.results:
            if result.missed:
                print(result.describe())
    for line in score.errors:
        print(line)
    print(f"cases {len(score.results)}; slowest {score.slowest_s:.1f}s")
    print(score.summary())
    below = score.below()
    for mark, (rate, bar) in below.items():
        print(f"below the bar: {mark} {rate:.0%} < {bar:.0%}")
    return 1 if args.check and below else 0


if __name__ == "__main__":
    sys.exit(main())
