"""Server time of the dashboard pages, without the Django test runner.

    .venv/bin/python bench/pages_bench.py [--incidents 10000] [--runs 20]

Creates a throwaway database (test_<name> of the configured one: TRIAGE_DATABASE_URL
or SQLite), bulk-creates a team with 10,000 incidents (plus another team's), a
256-rank diagnosis with its log, times each page with the test Client and prints
median / p95 / max, query counts and response sizes. Targets: incident page < 300 ms
(256 ranks), incident list < 200 ms (10,000 incidents).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402
from django.utils import timezone  # noqa: E402

CATEGORIES = ["gpu_oom", "data_schema", "nccl_timeout", "host_oom", "rendezvous", "version_mismatch", "unknown"]
EXCEPTIONS = ["OutOfMemoryError", "KeyError", "DistBackendError", "", "RendezvousTimeoutError", "TypeError", ""]


def seed(incident_count: int):
    from django.contrib.auth import get_user_model

    from jobs.models import Diagnosis, Incident, Membership, Team
    from tests.pages.factories import ORIGINAL_COMMAND, add_artifact, node_log, sample_diagnosis

    alpha, bravo = Team.objects.create(name="Alpha"), Team.objects.create(name="Bravo")
    alice = get_user_model().objects.create_user("alice", "alice@example.com", "correct-horse-battery")
    Membership.objects.create(team=alpha, user=alice, role="admin")
    now = timezone.now()

    def rows(team, count, prefix):
        for n in range(count):
            kind = n % len(CATEGORIES)
            yield Incident(team=team, title=f"{prefix} job {n}", job_id=f"{prefix}-{n:06d}", status="diagnosed",
                           category=CATEGORIES[kind], exception=EXCEPTIONS[kind], failing_rank=n % 64,
                           summary=f"Rank {n % 64} raised {EXCEPTIONS[kind] or 'nothing'} at step {n % 900}",
                           cluster=f"cluster-{n % 6}", launcher=["torchrun", "deepspeed", "accelerate"][n % 3],
                           world_size=64)

    Incident.objects.bulk_create(rows(alpha, incident_count, "alpha"), batch_size=2000)
    Incident.objects.bulk_create(rows(bravo, incident_count // 2, "bravo"), batch_size=2000)
    # Spread creation times over the past weeks (bulk_create stamps them all "now").
    incidents = list(Incident.objects.only("id"))
    for index, incident in enumerate(incidents):
        incident.created_at = now - timedelta(minutes=index * 3)
    Incident.objects.bulk_update(incidents, ["created_at"], batch_size=2000)

    big = Incident.objects.create(team=alpha, title="256-rank OOM", job_id="slurm-256", command=ORIGINAL_COMMAND,
                                  status="diagnosed", category="gpu_oom", failing_rank=137, world_size=256)
    data = sample_diagnosis(256, memory_points=400)
    Diagnosis.objects.create(incident=big, engine_version="1.0.0", data=data, category="gpu_oom", failing_rank=137,
                             fingerprint=data["fingerprint"])
    add_artifact(big, "node17.log", node_log(extra_lines=50_000))
    return alice, big


def measure(client, url, runs, params=None):
    started = time.perf_counter()
    client.get(url, params or {})  # the first request fills caches (templates, chart series)
    cold = (time.perf_counter() - started) * 1000
    timings, queries, size = [], 0, 0
    for _ in range(runs):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url, params or {})
            timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
        queries, size = len(captured), len(response.content)
    timings.sort()
    return {"median": statistics.median(timings), "p95": timings[max(0, int(len(timings) * 0.95) - 1)],
            "max": timings[-1], "cold": cold, "queries": queries, "bytes": size}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    setup_test_environment()
    settings.MEDIA_ROOT = Path(tempfile.mkdtemp(prefix="triage-bench-media-"))
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        started = time.perf_counter()
        alice, big = seed(args.incidents)
        print(f"seeded {args.incidents:,} incidents (+{args.incidents // 2:,} of another team) in "
              f"{time.perf_counter() - started:.1f} s on {connection.vendor}")
        client = Client()
        client.force_login(alice)
        pages = [
            ("incident list, page 1", reverse("jobs:incident_list"), None, 200),
            ("incident list, search", reverse("jobs:incident_list"), {"q": "OutOfMemory"}, 200),
            ("incident list, filters, page 20", reverse("jobs:incident_list"),
             {"category": "gpu_oom", "cluster": "cluster-2", "page": 20}, 200),
            ("incident page, 256 ranks", reverse("jobs:incident_detail", args=[big.pk]), None, 300),
            ("timeline.json, 256 ranks", reverse("jobs:incident_timeline_json", args=[big.pk]), None, 300),
            ("memory.json, 256 ranks", reverse("jobs:incident_memory_json", args=[big.pk]), None, 300),
            ("status.json", reverse("jobs:incident_status", args=[big.pk]), None, 100),
        ]
        artifact = big.artifacts.first()
        pages.append(("log viewer, line 40,000", reverse("jobs:artifact_log", args=[big.pk, artifact.pk]),
                      {"line": 40_000}, 300))
        print(f"{'page':36} {'median':>8} {'p95':>8} {'max':>8} {'first':>8} {'queries':>8} {'KiB':>8}  target")
        failed = False
        for name, url, params, target in pages:
            result = measure(client, url, args.runs, params)
            ok = result["median"] < target
            failed |= not ok
            print(f"{name:36} {result['median']:7.1f}ms {result['p95']:7.1f}ms {result['max']:7.1f}ms {result['cold']:7.1f}ms "
                  f"{result['queries']:>8} {result['bytes'] / 1024:8.1f}  < {target} ms {'ok' if ok else 'SLOW'}")
        return 1 if failed else 0
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    sys.exit(main())
