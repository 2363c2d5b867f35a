"""Accuracy: the engine's marks on every labelled set, beside the floor's, against the bars.

    python bench/accuracy.py [--corpus DIR [--only-corpus]] [--floor DIR] [--jobs N] [--verbose]

Scores each of the repository's own labelled sets that clear the bars (OWN_SETS: tests/fixtures/cpu_runs,
tests/fixtures/cpu_blind*, tests/triage/fixtures/variants and blind*) and, with ``--corpus``, an outside
corpus of labelled cases
(``make accuracy`` passes ``../shared/corpus`` unless told ``CORPUS=...``). ``--floor`` names the
folder of a naive stand-in for ``python -m triage`` (a ``triage/__main__.py`` there); its marks are
printed beside the engine's in the same run, so the engine is always read against a baseline.

Exits 2 when ``--corpus`` or ``--floor`` names a folder that is not there, 1 when the engine is under
a bar on any set (the same bars as tests/triage/test_corpus_score.py), 0 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.scoring import BARS, MARKS, Score, score_corpus  # noqa: E402

OWN_SETS = {
    "cpu_runs": ROOT / "tests" / "fixtures" / "cpu_runs",
    "variants": ROOT / "tests" / "triage" / "fixtures" / "variants",
    "blind": ROOT / "tests" / "triage" / "fixtures" / "blind",
    "blind2": ROOT / "tests" / "triage" / "fixtures" / "blind2",
    "blind3": ROOT / "tests" / "triage" / "fixtures" / "blind3",
    "blind4": ROOT / "tests" / "triage" / "fixtures" / "blind4",
    "blind5": ROOT / "tests" / "triage" / "fixtures" / "blind5",
    "blind6": ROOT / "tests" / "triage" / "fixtures" / "blind6",
    "cpu_blind": ROOT / "tests" / "fixtures" / "cpu_blind",
    "cpu_blind2": ROOT / "tests" / "fixtures" / "cpu_blind2",
    "cpu_blind3": ROOT / "tests" / "fixtures" / "cpu_blind3",
    "cpu_blind4": ROOT / "tests" / "fixtures" / "cpu_blind4",
    "blind8": ROOT / "tests" / "triage" / "fixtures" / "blind8",
    "blind9": ROOT / "tests" / "triage" / "fixtures" / "blind9",
    "blind10": ROOT / "tests" / "triage" / "fixtures" / "blind10",
    "blind11": ROOT / "tests" / "triage" / "fixtures" / "blind11",
    "blind13": ROOT / "tests" / "triage" / "fixtures" / "blind13",
    "cpu_blind8": ROOT / "tests" / "fixtures" / "cpu_blind8",
    "cpu_blind9": ROOT / "tests" / "fixtures" / "cpu_blind9",
    "cpu_blind11": ROOT / "tests" / "fixtures" / "cpu_blind11",
    "blind16": ROOT / "tests" / "triage" / "fixtures" / "blind16",
    "blind17": ROOT / "tests" / "triage" / "fixtures" / "blind17",
    "cpu_blind12": ROOT / "tests" / "fixtures" / "cpu_blind12",
    "blind18": ROOT / "tests" / "triage" / "fixtures" / "blind18",
    "cpu_blind13": ROOT / "tests" / "fixtures" / "cpu_blind13",
    "blind19": ROOT / "tests" / "triage" / "fixtures" / "blind19",
    "cpu_blind14": ROOT / "tests" / "fixtures" / "cpu_blind14",
    "blind21": ROOT / "tests" / "triage" / "fixtures" / "blind21",
    "blind15": ROOT / "tests" / "triage" / "fixtures" / "blind15",
    "blind22": ROOT / "tests" / "triage" / "fixtures" / "blind22",
    "blind20": ROOT / "tests" / "triage" / "fixtures" / "blind20",
    "blind24": ROOT / "tests" / "triage" / "fixtures" / "blind24",
    "blind27": ROOT / "tests" / "triage" / "fixtures" / "blind27",
    "cpu_blind19": ROOT / "tests" / "fixtures" / "cpu_blind19",
    "blind31": ROOT / "tests" / "triage" / "fixtures" / "blind31",
    "cpu_blind21": ROOT / "tests" / "fixtures" / "cpu_blind21",
    "blind30": ROOT / "tests" / "triage" / "fixtures" / "blind30",
    "blind32": ROOT / "tests" / "triage" / "fixtures" / "blind32",
    "cpu_blind23": ROOT / "tests" / "fixtures" / "cpu_blind23",
    "cpu_blind22": ROOT / "tests" / "fixtures" / "cpu_blind22",
    "blind33": ROOT / "tests" / "triage" / "fixtures" / "blind33",
    "blind26": ROOT / "tests" / "triage" / "fixtures" / "blind26",
    "blind29": ROOT / "tests" / "triage" / "fixtures" / "blind29",
    "cpu_blind25": ROOT / "tests" / "fixtures" / "cpu_blind25",
    "blind35": ROOT / "tests" / "triage" / "fixtures" / "blind35",
    "blind36": ROOT / "tests" / "triage" / "fixtures" / "blind36",
    "blind37": ROOT / "tests" / "triage" / "fixtures" / "blind37",
    "cpu_blind26": ROOT / "tests" / "fixtures" / "cpu_blind26",
    "cpu_blind27": ROOT / "tests" / "fixtures" / "cpu_blind27",
    "cpu_blind28": ROOT / "tests" / "fixtures" / "cpu_blind28",
    "cpu_blind29": ROOT / "tests" / "fixtures" / "cpu_blind29",
    "blind40": ROOT / "tests" / "triage" / "fixtures" / "blind40",
    "cpu_blind31": ROOT / "tests" / "fixtures" / "cpu_blind31",
    "cpu_blind32": ROOT / "tests" / "fixtures" / "cpu_blind32",
    "blind39": ROOT / "tests" / "triage" / "fixtures" / "blind39",
    "blind41": ROOT / "tests" / "triage" / "fixtures" / "blind41",
    "blind45": ROOT / "tests" / "triage" / "fixtures" / "blind45",
    "cpu_blind34": ROOT / "tests" / "fixtures" / "cpu_blind34",
    "cpu_blind37": ROOT / "tests" / "fixtures" / "cpu_blind37",
    "blind52": ROOT / "tests" / "triage" / "fixtures" / "blind52",
    "cpu_blind42": ROOT / "tests" / "fixtures" / "cpu_blind42",
    "cpu_blind44": ROOT / "tests" / "fixtures" / "cpu_blind44",
    "cpu_blind46": ROOT / "tests" / "fixtures" / "cpu_blind46",
    "cpu_blind47": ROOT / "tests" / "fixtures" / "cpu_blind47",
    "blind57": ROOT / "tests" / "triage" / "fixtures" / "blind57",
    "blind60": ROOT / "tests" / "triage" / "fixtures" / "blind60",
    "cpu_blind48": ROOT / "tests" / "fixtures" / "cpu_blind48",
    "cpu_blind50": ROOT / "tests" / "fixtures" / "cpu_blind50",
    "cpu_blind53": ROOT / "tests" / "fixtures" / "cpu_blind53",
    "blind64": ROOT / "tests" / "triage" / "fixtures" / "blind64",
    "cpu_blind55": ROOT / "tests" / "fixtures" / "cpu_blind55",
    "cpu_blind56": ROOT / "tests" / "fixtures" / "cpu_blind56",
}


def cell(score: Score | None, mark: str) -> str:
    if score is None:
        return "-"
    hits, scored = score.counts(mark)
    return f"{hits}/{scored} ({hits / scored:.0%})" if scored else "-"


def table(name: str, engine: Score, floor: Score | None) -> list[str]:
    lines = [f"== {name}: {len(engine.results)} cases ({engine.corpus})",
             f"   {'mark':<10} {'engine':>15} {'floor':>15} {'bar':>6}"]
    for mark in MARKS:
        if engine.counts(mark)[1] or (floor and floor.counts(mark)[1]):
            bar = f"{BARS[mark]:.0%}" if mark in BARS else ""
            lines.append(f"   {mark:<10} {cell(engine, mark):>15} {cell(floor, mark):>15} {bar:>6}")
    lines += [f"   no diagnosis: {line}" for line in engine.errors]
    lines += [f"   UNDER THE BAR: {mark} {rate:.0%} < {bar:.0%}" for mark, (rate, bar) in engine.below().items()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="an outside folder of labelled cases to score as well")
    parser.add_argument("--floor", type=Path, help="folder holding the naive baseline's triage/__main__.py")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases diagnosed at once")
    parser.add_argument("--verbose", action="store_true", help="list every case that missed a mark")
    parser.add_argument("--only-corpus", action="store_true", help="score --corpus alone, not the repository's sets")
    args = parser.parse_args(argv)

    sets = {} if args.only_corpus else dict(OWN_SETS)
    if args.only_corpus and args.corpus is None:
        parser.error("--only-corpus needs --corpus")
    if args.corpus is not None:
        if not args.corpus.is_dir() or not any(args.corpus.glob("*/truth.json")):
            print(f"accuracy: no labelled corpus at {args.corpus} (a folder of cases with truth.json); "
                  "point CORPUS= at one", file=sys.stderr)
            return 2
        sets = {"corpus": args.corpus, **sets}
    if args.floor is not None and not (args.floor / "triage" / "__main__.py").is_file():
        print(f"accuracy: no baseline at {args.floor} (expected {args.floor}/triage/__main__.py)", file=sys.stderr)
        return 2

    under = []
    for name, path in sets.items():
        started = time.perf_counter()
        engine = score_corpus(path, cwd=ROOT, jobs=args.jobs)
        floor = score_corpus(path, cwd=args.floor, jobs=args.jobs) if args.floor else None
        print("\n".join(table(name, engine, floor)))
        if args.verbose:
            print("\n".join(f"   {result.describe()}" for result in engine.results if result.missed))
        print(f"   ({time.perf_counter() - started:.0f} s; slowest case {engine.slowest_s:.1f} s)")
        if engine.below():
            under.append(name)
    if args.floor is None:
        print("(no --floor given: the engine's marks are printed without the baseline's)")
    if under:
        print(f"accuracy: FAILED, under a bar on {', '.join(under)}")
        return 1
    print("accuracy: every set clears every bar")
    return 0


if __name__ == "__main__":
    sys.exit(main())
