#!/usr/bin/env python3
"""Repro runs benchmark: per kind of run, time and peak memory, and the share of fixture cases reproduced.

    .venv/bin/python bench/repro_bench.py [--cases cpu-data-schema-tee,cpu-version-mismatch-tee]

Runs as root (the sandbox starts each run as its own uid) with the sandbox runtime installed
(`make sandbox-runtime`). Uses a throwaway var folder (SQLite, media) unless TRIAGE_DATABASE_URL is
set. Every case of tests/fixtures/cpu_runs becomes an incident (its log, command, data sample, and
train_tiny.py as the uploaded script), is diagnosed by the engine, then reproduced. Baselines measured
in the same run: an empty sandbox start, and the seed case's row check run directly (no sandbox).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "tests" / "fixtures" / "cpu_runs"
DEMO = REPO / "jobs" / "demo"


def setup_django() -> None:
    if not os.environ.get("TRIAGE_DATABASE_URL"):
        os.environ["TRIAGE_VAR_DIR"] = tempfile.mkdtemp(prefix="triage-repro-bench-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def incident_for(team, case: Path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from jobs.tasks import run_engine, save_diagnosis
    from jobs.uploads import create_incident

    logs = sorted(case.glob("*.log")) or [case / "log.txt"]
    data = case / "data_sample.json"
    incident = create_incident(
        team=team, logs=[SimpleUploadedFile(p.name, p.read_bytes()) for p in logs],
        command=(case / "command.txt").read_text().splitlines()[0],
        data=SimpleUploadedFile("data_sample.json", data.read_bytes()) if data.exists() else None,
        config=SimpleUploadedFile("train.py", (CASES / "train_tiny.py").read_bytes()), enqueue=False)
    save_diagnosis(incident.pk, run_engine(incident))
    incident.refresh_from_db()
    return incident


def baselines() -> dict:
    from repro import sandbox

    started = time.monotonic()
    empty = sandbox.run(["/bin/true"])
    sandbox_start = time.monotonic() - started
    runtime = REPO / "repro" / "runtime"
    started = time.monotonic()
    subprocess.run([str(sandbox.runtime_dir() / "bin" / "python"), str(runtime / "load_check.py"), "--format",
                    "sharegpt", str(DEMO / "keyerror-2rank.data.json")], capture_output=True, cwd=runtime)
    direct = time.monotonic() - started
    return {"sandbox_start_s": sandbox_start, "sandbox_true_exit": empty.exit_status, "direct_check_s": direct}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    args = parser.parse_args()
    setup_django()
    from jobs.models import Team
    from repro import runner

    wanted = {name for name in args.cases.split(",") if name}
    team = Team.objects.create(name=f"bench-{time.time_ns()}")
    base = baselines()
    print(f"baseline: empty sandbox start {base['sandbox_start_s'] * 1000:.0f} ms; "
          f"seed row check without sandbox {base['direct_check_s']:.2f} s")

    started = time.monotonic()
    seed = incident_for_seed(team)
    runner.reproduce(seed.pk)
    seed_s = time.monotonic() - started
    seed.diagnosis.refresh_from_db()
    fix = seed.diagnosis.data["fixes"][0]
    print(f"seed case (keyerror-2rank): diagnose + reproduce + verify {seed_s:.1f} s; "
          f"{fix['kind']} verified={fix['verified']} (goal: under 60 s from submit)")

    per_kind = defaultdict(lambda: {"runs": 0, "time": 0.0, "peak": 0.0, "cases": 0, "reproduced": 0})
    outcomes = []
    for case in sorted(p for p in CASES.iterdir() if p.is_dir()):
        if wanted and case.name not in wanted:
            continue
        incident = incident_for(team, case)
        started = time.monotonic()
        runner.reproduce(incident.pk)
        took = time.monotonic() - started
        runs = list(incident.repro_runs.order_by("id"))
        for run in runs:
            stats = per_kind[run.kind]
            stats["runs"] += 1
            stats["time"] += run.duration_s or 0.0
            stats["peak"] = max(stats["peak"], run.peak_memory_mb or 0.0)
            if not run.fix_kind:  # the reproduction itself, one per case and kind
                stats["cases"] += 1
                stats["reproduced"] += run.status == "reproduced"
        reproduced = any(run.status == "reproduced" for run in runs)
        verified = [run.fix_kind for run in runs if run.verified]
        unsupported = any(not run.reproducible for run in runs)
        outcome = "reproduced" if reproduced else ("not reproducible here" if unsupported else "not reproduced")
        outcomes.append((case.name, incident.category, outcome))
        why = next((run.reason for run in runs if run.reason), "")
        print(f"  {case.name:32s} {incident.category:18s} {outcome:22s} {took:5.1f} s"
              f"{'  verified: ' + ','.join(verified) if verified else ''}{'  (' + why[:90] + ')' if why and not reproduced else ''}")
    print("per kind of run:")
    for kind, stats in sorted(per_kind.items()):
        mean = stats["time"] / stats["runs"] if stats["runs"] else 0.0
        print(f"  {kind:12s} runs {stats['runs']:3d}  mean {mean:5.1f} s  peak {stats['peak']:7.0f} MiB (all processes)"
              f"  reproduced {stats['reproduced']}/{stats['cases']} cases")
    share = sum(1 for _, _, outcome in outcomes if outcome == "reproduced")
    possible = [o for o in outcomes if o[2] != "not reproducible here"]
    print(f"fixture cases reproduced: {share}/{len(outcomes)} ({share / len(outcomes) * 100 if outcomes else 0:.0f}%); "
          f"{share}/{len(possible)} of those that can happen on a CPU")
    return 0


def incident_for_seed(team):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from jobs.tasks import run_engine, save_diagnosis
    from jobs.uploads import create_incident

    incident = create_incident(
        team=team, logs=[SimpleUploadedFile("train.log", (DEMO / "keyerror-2rank.log").read_bytes())],
        command=(DEMO / "keyerror-2rank.command.txt").read_text(),
        data=SimpleUploadedFile("train_alpaca.json", (DEMO / "keyerror-2rank.data.json").read_bytes()),
        enqueue=False)
    save_diagnosis(incident.pk, run_engine(incident))
    incident.refresh_from_db()
    return incident


if __name__ == "__main__":
    sys.exit(main())
