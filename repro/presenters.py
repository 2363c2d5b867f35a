"""One shape for a run, used by the page's JSON endpoint and the REST API."""
from __future__ import annotations

from django.urls import reverse
from django.utils import timezone

from repro.models import ReproRun


def elapsed(run: ReproRun) -> float | None:
    if run.duration_s is not None and run.finished:
        return round(run.duration_s, 1)
    if run.started_at is None:
        return None
    end = run.finished_at or timezone.now()
    return round((end - run.started_at).total_seconds(), 1)


def _download(run: ReproRun, artifact_id: int | None, build_uri, api: bool) -> str | None:
    if not artifact_id:
        return None
    name = "api:incident-artifact-download" if api else "jobs:artifact_download"
    path = reverse(name, args=[run.incident_id, artifact_id])
    return build_uri(path) if build_uri else path


def run_dict(run: ReproRun, build_uri=None, api: bool = False) -> dict:
    """build_uri/api: the REST API's absolute download links; without them the pages' own."""
    verdict = run.verdict or {}
    return {
        "id": run.pk, "kind": run.kind, "kind_label": run.get_kind_display(), "status": run.status,
        "status_label": run.get_status_display(), "finished": run.finished,
        "reproduced": run.reproduced, "fix_kind": run.fix_kind or None, "fix_index": run.fix_index,
        "verified": run.verified, "reproducible": run.reproducible, "reason": run.reason,
        "command": run.command, "limits": run.limits, "exit_status": run.exit_status, "limit_hit": run.limit_hit or None,
        "elapsed_s": elapsed(run), "duration_s": run.duration_s, "peak_memory_mb": run.peak_memory_mb,
        "verdict": {key: verdict.get(key) for key in ("category", "exception", "message", "summary") if key in verdict},
        "details": run.details or {}, "log_tail": run.log_tail,
        "log_url": _download(run, run.log_id, build_uri, api),
        "output_url": _download(run, run.output_id, build_uri, api),
        "output_name": (run.details or {}).get("output_name") if run.output_id else None,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def runs_for(incident, build_uri=None, api: bool = False) -> list[dict]:
    return [run_dict(run, build_uri, api) for run in incident.repro_runs.order_by("created_at", "id")]


def verified_by_fix(incident) -> dict[int, bool]:
    """{fix index: verified} from the finished fix runs (the latest run of a fix wins)."""
    outcome: dict[int, bool] = {}
    for run in incident.repro_runs.exclude(fix_index=None).order_by("created_at", "id"):
        if run.verified is not None:
            outcome[run.fix_index] = run.verified
    return outcome


def with_verified(incident, data: dict | None) -> dict | None:
    """The diagnosis JSON with each fix's `verified` taken from the repro runs."""
    if not data or not isinstance(data.get("fixes"), list):
        return data
    outcome = verified_by_fix(incident)
    if not outcome:
        return data
    kinds = dict(incident.repro_runs.exclude(fix_index=None).values_list("fix_index", "fix_kind"))
    fixes = [dict(fix, verified=outcome[i]) if isinstance(fix, dict) and i in outcome and kinds.get(i) == fix.get("kind")
             else fix for i, fix in enumerate(data["fixes"])]
    return {**data, "fixes": fixes}
