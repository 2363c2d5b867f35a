"""`make accuracy`'s script: it refuses a missing corpus clearly, and prints the engine beside the floor."""

from __future__ import annotations

import json
import subprocess
import sys

from triage_helpers import ROOT, write

SCRIPT = ROOT / "bench" / "accuracy.py"
LOG = ("[rank1]: Traceback (most recent call last):\n"
       "[rank1]:   File \"train.py\", line 9, in __getitem__\n"
       "[rank1]: KeyError: 'conversations'\n")
# A stand-in for `python -m triage` that always answers the same thing, as a naive floor would.
FLOOR = 'import json\nprint(json.dumps({"category": "code_bug", "failing_rank": 0, "root_cause": {"exception": "KeyError"}}))\n'


def accuracy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_it_fails_clearly_when_the_corpus_is_missing(tmp_path):
    proc = accuracy("--corpus", str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    assert f"no labelled corpus at {tmp_path / 'nowhere'}" in proc.stderr and "CORPUS=" in proc.stderr
    proc = accuracy("--corpus", str(tmp_path), "--floor", str(tmp_path / "no-floor"))
    assert proc.returncode == 2  # an empty folder is no corpus either


def test_it_prints_the_floor_beside_the_engine_and_fails_under_a_bar(tmp_path):
    corpus = tmp_path / "corpus"
    write(corpus / "keyerror" / "rank1.log", LOG)
    write(corpus / "keyerror" / "truth.json", json.dumps({
        "category": "data_schema", "root_exception": "KeyError", "failing_rank": 1,
        "fix_kinds": ["convert_data_format"]}))
    write(tmp_path / "floor" / "triage" / "__main__.py", FLOOR)
    proc = accuracy("--corpus", str(corpus), "--only-corpus", "--floor", str(tmp_path / "floor"), "--jobs", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line.split()[0]: line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("   ")}
    assert rows["category"][:4] == ["1/1", "(100%)", "0/1", "(0%)"]  # engine, then floor
    assert rows["rank"][:4] == ["1/1", "(100%)", "0/1", "(0%)"]
    assert "every set clears every bar" in proc.stdout

    write(corpus / "keyerror" / "truth.json", json.dumps({"category": "storage", "failing_rank": 1}))
    proc = accuracy("--corpus", str(corpus), "--only-corpus")
    assert proc.returncode == 1
    assert "UNDER THE BAR: category 0% < 90%" in proc.stdout and "FAILED, under a bar on corpus" in proc.stdout
