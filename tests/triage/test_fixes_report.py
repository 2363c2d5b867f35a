"""The CLI's text report keeps every step of a fix: what to run first, then the corrected command."""
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "jobs" / "demo"


def test_the_text_report_prints_the_converter_before_the_command_that_reads_its_output():
    out = subprocess.run(
        [sys.executable, "-m", "triage", "diagnose", str(DEMO / "keyerror-2rank.log"),
         "--command-file", str(DEMO / "keyerror-2rank.command.txt"), "--data", str(DEMO / "keyerror-2rank.data.json")],
        capture_output=True, text=True, check=True).stdout
    fix = out[out.index("1. [convert_data_format]"):out.index("2. [")]
    first, then = fix.index("run this first:"), fix.index("then run:")
    assert first < then
    converted = fix[first:then].split()[-1]  # the converter's output file ...
    assert converted.endswith(".sharegpt.json") and f"--data_path {converted}" in fix[then:]  # ... is what runs
    assert "ranked: #1" in fix
    ruled_out = out[out.index("2. [fix_data_file]"):]
    assert "ruled out" in ruled_out and "parses" in ruled_out
