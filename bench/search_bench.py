"""Knowledge-base lookups over 100,000 stored incidents on PostgreSQL: search and similar incidents.

    .venv/bin/python bench/search_bench.py [--incidents 100000] [--queries 200]

Uses its own throwaway database (test_<name> of TRIAGE_DATABASE_URL, by default
postgres://postgres@127.0.0.1:5432/triage_kb_bench), bulk-inserts a team's incidents made from every
fixture case's real diagnosis (paths, hosts, ranks, numbers rewritten per incident, as the grouping
benchmark does) plus a second team's, groups them with the product's grouping, then times:

- search: knowledge.search.search (problems + incidents, PostgreSQL full-text) for words from
  messages, exceptions, evidence and job ids, some with category / status / cluster / date filters
- similar: knowledge.similar.similar_incidents for an incident's perturbed evidence (it compares
  against the team's distinct masked evidence texts, at most 3,000 of the category)

and prints p50 / p95 / max against the goal (p95 < 100 ms) and against baselines measured in the
same run: the substring fallback (what SQLite uses) on the same PostgreSQL tables, and rapidfuzz over
every incident of the team (no category index, no de-duplication).
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("TRIAGE_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/triage_kb_bench")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

GOAL_MS = 100.0
CLUSTERS = ["h100-east", "h100-west", "a100-lab", "l40-spot", "cpu-pool"]
TEMPLATE_VARIANTS = 12


def templates():
    """(case name, diagnosis dict) for every fixture case, and rewritten variants of each."""
    import grouping_bench as cases

    rows = []
    with tempfile.TemporaryDirectory(prefix="search-bench-") as tmp:
        for number, (name, logs, command, _label) in enumerate(cases._cases()):
            folder = Path(tmp) / str(number)
            folder.mkdir()
            data = cases._diagnose(logs, command, folder, None)
            rows.append((name, data))
            for copy in range(1, TEMPLATE_VARIANTS):
                variation = cases.Variation(seed=number * 1000 + copy)
                rows.append((name, rewrite(data, variation)))
    return rows


def rewrite(data: dict, variation) -> dict:
    import copy

    out = copy.deepcopy(data)
    root = out.get("root_cause") or {}
    if root.get("message"):
        root["message"] = variation.rewrite(root["message"])
    for item in list(root.get("evidence") or []) + list(out.get("evidence") or []):
        if isinstance(item, dict) and item.get("text"):
            item["text"] = variation.rewrite(item["text"])
    for frame in root.get("frames") or []:
        if frame.get("file"):
            frame["file"] = variation.rewrite(frame["file"])
    return out


def seed(count: int, rng: random.Random):
    from jobs.models import Incident, Team
    from knowledge.grouping import choose, signature
    from knowledge.models import EvidenceSample, Problem, ProblemHash, ProblemOccurrence
    from knowledge.services import evidence_digest
    from knowledge.textindex import search_text

    variants = templates()
    signatures = [signature(data) for _, data in variants]
    alpha, bravo = Team.objects.create(name="Alpha"), Team.objects.create(name="Bravo")
    now = timezone.now()
    plan = []  # (team, variant index, job id, cluster, seen_at)
    for n in range(count):
        plan.append((alpha, rng.randrange(len(variants)), f"job-{n:06d}", rng.choice(CLUSTERS),
                     now - timedelta(minutes=rng.randrange(180 * 24 * 60))))
    for n in range(count // 10):
        plan.append((bravo, rng.randrange(len(variants)), f"bravo-{n:06d}", "bravo-pool",
                     now - timedelta(minutes=rng.randrange(180 * 24 * 60))))
    plan.sort(key=lambda row: row[4])
    incidents = Incident.objects.bulk_create(
        (Incident(team=team, title=f"{variants[index][0]} run", job_id=job, cluster=cluster, status="diagnosed",
                  category=signatures[index].category, exception=signatures[index].exception[:200])
         for team, index, job, cluster, _ in plan), batch_size=5000)
    # Grouping, as knowledge.services.record does it, in memory: any hash joins, fine first.
    held: dict[tuple, int] = {}
    problems: dict[int, dict] = {}
    assignment = []
    for (team, index, _job, _cluster, seen_at), _incident in zip(plan, incidents, strict=True):
        sig = signatures[index]
        key = choose(sig, lambda kind, value, team=team: held.get((team.pk, kind, value)))
        if key is None:
            key = len(problems)
            problems[key] = {"team": team, "sig": sig, "first": seen_at, "last": seen_at, "n": 0}
        for kind, value in sig.hashes:
            held.setdefault((team.pk, kind, value), key)
        problem = problems[key]
        problem["n"] += 1
        problem["last"] = seen_at
        assignment.append(key)
    rows = Problem.objects.bulk_create(
        [Problem(team=item["team"], fingerprint=item["sig"].fine, title=item["sig"].title, category=item["sig"].category,
                 exception=item["sig"].exception, first_seen=item["first"], last_seen=item["last"], occurrences=item["n"],
                 status=rng.choice(["open", "open", "resolved", "wont_fix"]),
                 resolution=rng.choice(["", "Lowered the batch size and enabled gradient checkpointing.",
                                        "Converted the data with the ShareGPT converter.",
                                        "Drained the node; the GPU was replaced."]))
         for item in problems.values()], batch_size=2000)
    problem_ids = {key: row.pk for key, row in zip(problems, rows, strict=True)}
    ProblemHash.objects.bulk_create(
        [ProblemHash(team_id=team_id, problem_id=problem_ids[key], kind=kind, value=value)
         for (team_id, kind, value), key in held.items()], batch_size=5000)

    def occurrences():
        for (team, index, job, cluster, seen_at), incident, key in zip(plan, incidents, assignment, strict=True):
            sig, data = signatures[index], variants[index][1]
            root = data.get("root_cause") or {}
            yield ProblemOccurrence(
                problem_id=problem_ids[key], incident=incident, team=team, seen_at=seen_at, category=sig.category,
                exception=sig.exception, cluster=cluster, job_id=job, failing_rank=data.get("failing_rank"),
                fine_hash=sig.fine, coarse_hash=sig.coarse, message=str(root.get("message") or "")[:2000],
                evidence="\n".join(sig.evidence), search_text=search_text(incident, data))

    ProblemOccurrence.objects.bulk_create(occurrences(), batch_size=5000)
    samples: dict[tuple, EvidenceSample] = {}  # the latest incident of each distinct evidence text
    for (team, index, _job, _cluster, seen_at), incident in zip(plan, incidents, strict=True):
        sig = signatures[index]
        text = "\n".join(sig.evidence)
        if text:
            samples[(team.pk, evidence_digest(text))] = EvidenceSample(
                team=team, category=sig.category, digest=evidence_digest(text), evidence=text, incident=incident,
                seen_at=seen_at)
    EvidenceSample.objects.bulk_create(samples.values(), batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return alpha, bravo, variants, len(problems)


def CATEGORIES_SEEN():  # noqa: N802
    from knowledge.models import ProblemOccurrence

    return sorted(set(ProblemOccurrence.objects.values_list("category", flat=True).distinct()))


def timed(function, items) -> list[float]:
    timings = []
    for item in items:
        started = time.perf_counter()
        function(item)
        timings.append((time.perf_counter() - started) * 1000)
    return sorted(timings)


def line(name: str, timings: list[float], goal: float | None = GOAL_MS) -> bool:
    p95 = timings[max(0, int(round(len(timings) * 0.95)) - 1)]
    verdict = "  (baseline)" if goal is None else f"  (goal p95 < {goal:.0f} ms)  " + ("ok" if p95 < goal else "SLOW")
    print(f"  {name:46} n={len(timings):4d}  p50 {statistics.median(timings):7.1f} ms  p95 {p95:7.1f} ms  "
          f"max {timings[-1]:7.1f} ms{verdict}")
    return goal is None or p95 < goal


def search_queries(rng: random.Random, count: int, variants) -> list:
    from knowledge.search import Filters

    words = ["conversations", "OutOfMemoryError", "CUDA out of memory", "Watchdog caught collective operation timeout",
             "No space left on device", "undefined symbol", "KeyError", "RendezvousTimeoutError", "Bus error",
             "ShareGPT converter", "gradient checkpointing", "illegal memory access", "Permission denied",
             "unexpected keyword argument", "JSONDecodeError", "chat_template", "SIGKILL", "NCCL error"]
    today = timezone.now().date()
    queries = []
    for n in range(count):
        kind = n % 5
        if kind == 0:
            queries.append(Filters(q=rng.choice(words)))
        elif kind == 1:
            queries.append(Filters(q=f"job-{rng.randrange(100_000):06d}"))
        elif kind == 2:
            queries.append(Filters(q=rng.choice(words), cluster=rng.choice(CLUSTERS),
                                   since=today - timedelta(days=rng.randrange(10, 120))))
        elif kind == 3:
            queries.append(Filters(q=rng.choice(words), status=rng.choice(["open", "resolved"])))
        else:
            category = variants[rng.randrange(len(variants))][1].get("category") or "unknown"
            queries.append(Filters(q=rng.choice(words), category=category))
    return queries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="keep the seeded database for the next run")
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        print("search bench: needs PostgreSQL (set TRIAGE_DATABASE_URL)", file=sys.stderr)
        return 2
    from knowledge import search, similar
    from knowledge.models import EvidenceSample, ProblemOccurrence

    rng = random.Random(13)
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=args.keep)
    try:
        started = time.perf_counter()
        from jobs.models import Team

        if args.keep and Team.objects.filter(name="Alpha").exists():
            import grouping_bench as cases  # noqa: F401 - same variants, no seeding

            alpha, variants = Team.objects.get(name="Alpha"), [(None, {"category": c}) for c in CATEGORIES_SEEN()]
            from knowledge.models import Problem

            problem_count = Problem.objects.count()
        else:
            alpha, _bravo, variants, problem_count = seed(args.incidents, rng)
        print(f"search bench: {args.incidents:,} incidents of team Alpha (+{args.incidents // 10:,} of Bravo), "
              f"{problem_count:,} problems, from {len(variants):,} diagnoses of the fixture cases; seeded in "
              f"{time.perf_counter() - started:.0f} s on {connection.vendor} {connection.pg_version // 10000}")
        team = [alpha.pk]
        queries = search_queries(rng, args.queries, variants)
        ok = True

        def run_search(filters):
            results = search.search(team, filters)
            return len(results.problems) + len(results.incidents)

        for filters in queries[:5]:
            run_search(filters)  # warm the caches
        ok &= line("search (full text, problems + incidents)", timed(run_search, queries))
        full_text = search.uses_full_text
        search.uses_full_text = lambda: False
        try:
            line("baseline: substring search on the same tables", timed(run_search, queries[:20]), goal=None)
        finally:
            search.uses_full_text = full_text

        sample = list(ProblemOccurrence.objects.filter(team=alpha).order_by("?").values_list(
            "incident_id", "problem_id", "category", "evidence")[:args.queries])

        def perturb(text: str) -> str:
            lines = text.splitlines()
            if len(lines) > 2:
                lines.pop(rng.randrange(len(lines)))
            return "\n".join(lines + ["warning: <n> ranks reported the failure"])

        lookups = [(incident, problem, category, perturb(evidence)) for incident, problem, category, evidence in sample]

        def run_similar(item):
            incident, problem, category, evidence = item
            return similar.similar_incidents(alpha.pk, evidence, category=category, exclude_incident=incident,
                                             exclude_problem=problem)

        found = [run_similar(item) for item in lookups[:5]]
        ok &= line("similar incidents (rapidfuzz, distinct evidence)", timed(run_similar, lookups))
        scored = sum(1 for item in found if item)
        print(f"  similar lookups that found a past incident: {scored}/{len(found)} of the warm-up sample")

        from rapidfuzz import fuzz, process

        everything = list(ProblemOccurrence.objects.filter(team=alpha).values_list("evidence", flat=True))

        def run_naive(item):
            return process.extract(item[3], everything, scorer=fuzz.token_set_ratio, limit=5)

        line("baseline: rapidfuzz over every incident", timed(run_naive, lookups[:5]), goal=None)
        print(f"  distinct evidence texts compared against: {EvidenceSample.objects.filter(team=alpha).count():,}")
        print("  goals met" if ok else "  GOALS MISSED")
        return 0 if ok else 1
    finally:
        if not args.keep:
            connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    sys.exit(main())
