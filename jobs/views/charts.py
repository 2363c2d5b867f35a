"""JSON endpoints behind the incident page's two Plotly charts (series computed server-side).

Computing the series of a large job (hundreds of ranks, many points) takes a while, so the
result is cached per diagnosis; a re-diagnosis saves the incident, which changes the key.
"""
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.urls import reverse
from django.utils.http import urlencode

from jobs import logfiles, memorychart
from jobs.cache import cache_call
from jobs.models import Diagnosis
from jobs.timelinechart import timeline as timeline_traces
from jobs.views.incidents import visible_incident

CACHE_SECONDS = 3600


def _chart(request, pk, name, keys, compute):
    incident = visible_incident(request, pk)
    return _cached_chart(incident, name, keys, compute)


def _cached_chart(incident, name, keys, compute):
    diagnosis_pk = Diagnosis.objects.filter(incident=incident).values_list("pk", flat=True).first()
    if diagnosis_pk is None:
        return JsonResponse(compute({}))
    stamp = incident.updated_at.timestamp() if incident.updated_at else 0
    key = f"triage:chart:{name}:{incident.pk}:{diagnosis_pk}:{stamp}"
    result = cache_call("get", key)
    if result is None:
        # Only the keys this chart needs are read from the JSON column.
        row = Diagnosis.objects.filter(pk=diagnosis_pk).values(*(f"data__{k}" for k in keys)).first() or {}
        result = compute({k: row.get(f"data__{k}") for k in keys})
        cache_call("set", key, result, CACHE_SECONDS)
    return JsonResponse(result)


def log_linker(incident):
    """link(source, line, rank) -> the log viewer URL at that line of the artifact the source names."""
    artifacts = list(incident.artifacts.all())
    found = {}

    def link(source, line, rank):
        if source not in found:
            found[source] = logfiles.find_artifact(artifacts, source)
        artifact, member = found[source]
        if artifact is None:
            return None
        query = {"line": line}
        if member:
            query["member"] = member
        return reverse("jobs:artifact_log", args=[incident.pk, artifact.pk]) + "?" + urlencode(query) + f"#L{line}"

    return link


@login_required
def timeline_json(request, pk):
    incident = visible_incident(request, pk)
    link = log_linker(incident)
    keys = ("ranks", "failing_rank", "root_cause", "evidence")
    return _cached_chart(incident, "timeline", keys, lambda data: timeline_traces(data, link))


@login_required
def memory_json(request, pk):
    return _chart(request, pk, "memory", ("memory", "failing_rank", "category"), memorychart.memory)
