"""The incident list, the incident page and its live status JSON."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection, models
from django.db.models.expressions import RawSQL
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from jobs import fixview, presenters
from jobs.forms import IncidentFilterForm
from jobs.listing import choices, filter_rows, page_of, query_filters
from jobs.memorychart import show_memory
from jobs.models import Diagnosis, Incident
from jobs.topfix import top_fix

PAGE_SIZE = 50
LIST_COLUMNS = ("id", "title", "job_id", "status", "category", "exception", "failing_rank", "summary",
                "cluster", "launcher", "world_size", "created_at")


INCIDENT_EXACT_FILTERS = ("category", "status", "cluster", "launcher")


@login_required
def incident_list(request):
    filters = query_filters(IncidentFilterForm(request.GET))
    visible = Incident.objects.visible_to(request.user)
    rows = filter_rows(visible.only(*LIST_COLUMNS), filters, exact=INCIDENT_EXACT_FILTERS)
    page, query_string = page_of(request, rows.order_by("-created_at", "-id"), PAGE_SIZE)
    return render(request, "jobs/incident_list.html", {
        "page": page,
        "incidents": page.object_list,
        "filters": filters,
        "filtering": bool(filters),
        "query_string": query_string,
        "statuses": Incident.Status.choices,
        "categories": choices(visible, "category"),
        "clusters": choices(visible, "cluster"),
        "launchers": choices(visible, "launcher"),
    })


def visible_incident(request, pk):
    return get_object_or_404(Incident.objects.visible_to(request.user).select_related("team"), pk=pk)


# The incident page reads only these parts of the diagnosis JSON; the memory series (the bulk of
# a large diagnosis) go to the memory chart's own endpoint.
PAGE_KEYS = ("engine_version", "category", "confidence", "summary", "launcher", "world_size", "failing_rank",
             "root_cause", "ranks", "fixes", "fingerprint", "evidence", "launcher_root_cause_rank",
             "launcher_verdict_wrong", "launcher_verdict_reason")


def page_data(incident) -> dict | None:
    """The diagnosis keys the page shows, without the memory series (None: no diagnosis)."""
    rows = Diagnosis.objects.filter(incident=incident)
    memory_keys = ("data__memory__estimate", "data__memory__series__0")
    if connection.vendor == "postgresql":
        # Each JSON path re-reads (detoasts) the whole column: three reads instead of one per key.
        row = rows.annotate(
            page=RawSQL("(data - 'memory')", (), output_field=models.JSONField()),
        ).values("page", *memory_keys).first()
        if row is None:
            return None
        data = {key: value for key, value in (row["page"] or {}).items() if value is not None}
    else:
        row = rows.values(*(f"data__{key}" for key in PAGE_KEYS), *memory_keys).first()
        if row is None:
            return None
        data = {key: row[f"data__{key}"] for key in PAGE_KEYS if row[f"data__{key}"] is not None}
    first_series = row["data__memory__series__0"]
    data["memory"] = {"estimate": row["data__memory__estimate"], "series": [first_series] if first_series else []}
    return data


@login_required
def incident_detail(request, pk):
    incident = visible_incident(request, pk)
    artifacts = list(incident.artifacts.all())
    data = page_data(incident)
    context = {"incident": incident, "artifacts": artifacts, "diagnosis": data is not None, "data": data or {}}
    if data is not None:
        context.update({
            "verdict": presenters.verdict(data, incident),
            "evidence": presenters.evidence(data, artifacts),
            "fixes": fixview.fixes(data, incident.command),
            "estimate": fixview.estimate(data),
            "show_memory": show_memory(data),
            "rank_statuses": presenters.rank_statuses(data),
            "has_ranks": bool(presenters.as_list(data.get("ranks"))),
            "has_memory": bool(data["memory"]["series"]),
        })
        context["top_fix"] = top_fix(context["fixes"])
        raw = dict(data, memory={"estimate": data["memory"]["estimate"], "series": "left out: see the API"})
        context["raw_json"], context["raw_json_cut"] = presenters.raw_json(raw)
    return render(request, "jobs/incident_detail.html", context)


@login_required
def incident_status(request, pk):
    incident = visible_incident(request, pk)
    return JsonResponse({
        "id": incident.pk,
        "status": incident.status,
        "status_display": incident.get_status_display(),
        "status_reason": incident.status_reason,
        "finished": incident.is_finished,
        "category": incident.category,
        "failing_rank": incident.failing_rank,
        "summary": incident.summary,
        "url": reverse("jobs:incident_detail", args=[incident.pk]),
        "updated_at": incident.updated_at.isoformat() if incident.updated_at else None,
    })
