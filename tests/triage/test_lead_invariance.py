"""What a log collector glues before every line changes no answer, on every case of three whole fixture sets.

Each case is diagnosed as it is and again with every line of every log given a collector's lead (kubectl's
`--timestamps`, `docker compose logs`' service tag, journald's host and program, `aws logs tail`'s stream);
the second diagnosis must earn every mark the first earned. The leads are put on text files only: archives and
structured records (JSON, CSV) keep their bytes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from triage_helpers import FIXTURES, ROOT

from triage.scoring import CONFIG_FILES, NOT_LOGS, diagnose_in_process, find_cases, mark_case

SETS = [ROOT / "tests" / "fixtures" / "cpu_runs", FIXTURES / "blind2", FIXTURES / "blind27"]
KEPT_AS_IS = (".gz", ".zip", ".tar", ".tgz", ".bz2", ".xz", ".json", ".jsonl", ".csv")
LEADS = {
    # a clock that moves with the line, as a collector's own would
    "kubectl-timestamps": lambda n: f"2026-11-05T08:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z ",
    "compose-service": lambda n: "trainer-1  | ",
    # journald / syslog: the host, then the program and its pid
    "journald": lambda n: f"Nov 05 08:{n // 60 % 60:02d}:{n % 60:02d} gpu-node-07 python3[41822]: ",
    # `aws logs tail`: the event's time, then the log stream's name
    "aws-logs-tail": lambda n: f"2026-11-05T08:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}000+00:00 "
                               "sft-run/algo-1-1764000000 ",
}


def with_lead(case: Path, into: Path, lead) -> Path:
    for path in case.rglob("*"):
        target = into / path.relative_to(case)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        top = path.relative_to(case).parts[0]
        if top in NOT_LOGS or top in CONFIG_FILES or path.suffix in KEPT_AS_IS:
            shutil.copy(path, target)
            continue
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError:
            shutil.copy(path, target)
            continue
        target.write_text("\n".join(lead(n) + line if line else line for n, line in enumerate(lines)),
                          encoding="utf-8")
    return into


@pytest.mark.parametrize("lead", list(LEADS))
@pytest.mark.parametrize("corpus", SETS, ids=[path.name for path in SETS])
def test_a_lead_on_every_line_loses_no_mark(tmp_path, corpus, lead):
    lost = []
    for case in find_cases(corpus):
        truth = json.loads((case / "truth.json").read_text(encoding="utf-8"))
        plain = mark_case(truth, diagnose_in_process(case)[0])
        led = mark_case(truth, diagnose_in_process(with_lead(case, tmp_path / case.name, LEADS[lead]))[0])
        lost += [f"{case.name}: {mark}" for mark, hit in plain.items() if hit and not led.get(mark)]
    assert not lost, lost
