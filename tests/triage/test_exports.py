"""A console's CSV or JSON export is read as the lines it carries, oldest first."""

from __future__ import annotations

import csv
import json

from triage import diagnose, exports

TRACE = ('Traceback (most recent call last):\n  File "/app/fit.py", line 30, in <module>\n    run()\n'
         "KeyError: 'instruction'\n")


def test_a_logs_explorer_csv_export_newest_first(tmp_path):
    rows = [("2026-11-20T03:12:09.000Z", "ERROR", "trainer-0-1-abcde", TRACE),
            ("2026-11-20T03:11:02.000Z", "INFO", "trainer-0-0-fghij", "step 10 loss 2.1")]
    path = tmp_path / "downloaded-logs.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["timestamp", "severity", "resource.labels.pod_name", "textPayload"])
        writer.writerows(rows)
    got = exports.lines(path.read_bytes(), exports.sniff(path.read_bytes()[:4096]))
    assert got[0] == b"2026-11-20T03:11:02.000Z trainer-0-0-fghij: step 10 loss 2.1"
    assert got[-1].endswith(b"trainer-0-1-abcde: KeyError: 'instruction'")
    result = diagnose([path])
    assert (result.category, result.root_cause.exception) == ("data_schema", "KeyError")


def test_a_notebook_runners_json_array(tmp_path):
    records = [{"stream_name": "stdout", "time": 1.5, "data": "epoch 1\n"},
               {"stream_name": "stderr", "time": 9.2, "data": TRACE}]
    path = tmp_path / "__notebook__.log"
    path.write_text(json.dumps(records))
    assert exports.sniff(path.read_bytes()) == "json"
    result = diagnose([path])
    assert (result.category, result.root_cause.exception) == ("data_schema", "KeyError")


def test_what_is_not_an_export_is_left_alone():
    assert exports.sniff(b"step,loss\n1,2.3\n") is None
    assert exports.sniff(b"[rank0]: Traceback (most recent call last):\n") is None
    assert exports.lines(b"[1, 2, 3]", "json") is None
    assert exports.lines(b'[{"level": "info"}]', "json") is None
