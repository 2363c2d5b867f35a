"""The corpus scorer over the shared corpus (and the CPU runs once they exist) stays above the bar."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from triage_helpers import ROOT

SHARED = ROOT.parent / "shared"  # shared/ sits beside the checkout, for developers and CI alike
SCORER = SHARED / "tools" / "score_corpus.py"
CORPORA = [
    SHARED / "corpus",
    ROOT / "tests" / "fixtures" / "cpu_runs",
    # hand-written variants of real library messages in other launcher layouts (tests/triage/fixtures/variants)
    ROOT / "tests" / "triage" / "fixtures" / "variants",
    # cases written blind (by someone who never read the engine), kept as a held-out-style check
    ROOT / "tests" / "triage" / "fixtures" / "blind",
]


def _score(corpus: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, str(SCORER), str(corpus), "--python", sys.executable],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    marks = dict(re.findall(r"(\w+) \d+/\d+ \((\d+)%\)", proc.stdout.splitlines()[-1]))
    return {name: int(value) / 100 for name, value in marks.items()}


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda path: path.name)
def test_it_scores_at_least_ninety_percent_on_category(corpus):
    # A missing corpus is a broken checkout, not a reason to pass quietly.
    assert SCORER.exists(), f"no scorer at {SCORER}"
    assert any(corpus.glob("*/truth.json")), f"no cases in {corpus}"
    marks = _score(corpus)
    assert marks["category"] >= 0.9, marks
    assert marks.get("exception", 1.0) >= 0.9, marks
    assert marks.get("rank", 1.0) >= 0.9, marks
    assert marks.get("fix_any", 1.0) >= 0.9, marks
    assert marks.get("fix_first", 1.0) >= 0.75, marks
