"""Whatever bytes arrive, the engine returns a diagnosis (never a crash)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triage import diagnose
from triage.errors import UnusableInput

FRAGMENTS = [
    "Traceback (most recent call last):",
    '  File "/w/t.py", line 3, in f',
    "KeyError: 'x'",
    "[rank1]: ",
    "[default0]:",
    "During handling of the above exception, another exception occurred:",
    "Failures:",
    "Root Cause (first observed failure):",
    "[0]:",
    "  exitcode  : -9 (pid: 12)",
    "  rank      : 0 (local_rank: 0)",
    "╭── Traceback (most recent call last) ──╮",
    "│ /w/t.py:3 in f │",
    "╰────╯",
    "failed (exitcode: 1) local_rank: 0 (pid: 1)",
    "Watchdog caught collective operati",
    "CUDA out of memory",
    "\r",
    "\x1b[31m",
    "\x00",
    "RuntimeError:",
    "srun: error: n1: task 0: Killed",
    "  3: ",
    "\n",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sampled_from(FRAGMENTS),
            st.text(max_size=40),
            st.binary(max_size=40).map(lambda raw: raw.decode("latin-1")),
        ),
        max_size=60,
    )
)
def test_it_always_returns_a_valid_diagnosis(pieces):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.log"
        raw = "\n".join(pieces).encode("utf-8", errors="surrogatepass").replace(b"\xed", b"?")
        path.write_bytes(raw)
        try:
            data = diagnose([path]).to_dict()
        except UnusableInput as error:
            # what starts like an archive is read as one, and a broken archive is refused in words
            assert raw.startswith((b"PK", b"\x1f\x8b", b"BZh", b"\xfd7zXZ")) and "archive" in str(error)
            return
        json.dumps(data)
        assert data["category"]
        assert 0 <= data["confidence"] <= 1


def test_a_million_repeated_traceback_openers_cost_one_opener(tmp_path):
    """A log of repeated `Traceback (most recent call last):` lines is diagnosed as if it held one:
    the repeats are skipped at the cost of a byte comparison (bench/robustness figures the speed)."""
    from triage import diagnose

    real = (b'[rank2]: Traceback (most recent call last):\n[rank2]:   File "/srv/train.py", line 12, in <module>\n'
            b"[rank2]:     batch = next(loader)\n[rank2]: KeyError: 'conversations'\n")
    flooded = tmp_path / "flood.log"
    flooded.write_bytes(b"[rank2]: Traceback (most recent call last):\n" * 200_000 + real)
    single = tmp_path / "single.log"
    single.write_bytes(b"[rank2]: Traceback (most recent call last):\n" + real)
    a, b = diagnose([flooded]).to_dict(), diagnose([single]).to_dict()
    assert a["category"] == b["category"] == "data_schema"
    assert a["root_cause"]["exception"] == b["root_cause"]["exception"] == "KeyError"
    assert a["failing_rank"] == b["failing_rank"] == 2
