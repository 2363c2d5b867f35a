"""The log viewer (a page of lines at a time, with search) and artifact downloads."""
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, render

from jobs import logfiles
from jobs.models import Artifact
from jobs.views.incidents import visible_incident


def _int(raw, default=None, minimum=None):
    try:
        value = int(raw)
    except (TypeError, ValueError):
        return default
    return max(minimum, value) if minimum is not None else value


def _artifact(request, pk, artifact_pk):
    incident = visible_incident(request, pk)
    return incident, get_object_or_404(Artifact, pk=artifact_pk, incident=incident)


@login_required
def artifact_log(request, pk, artifact_pk):
    incident, artifact = _artifact(request, pk, artifact_pk)
    member = request.GET.get("member", "")[:500]
    rank = _int(request.GET.get("rank"), minimum=0)
    query = request.GET.get("q", "")[:200]
    line = _int(request.GET.get("line"), minimum=1)
    start = _int(request.GET.get("start"), minimum=1)
    if start is None:
        start = max(1, line - 20) if line else 1
    members = logfiles.archive_members(artifact) if logfiles.is_archive(artifact) and not member else []
    page = results = None
    if not members:
        page = logfiles.read_page(artifact, start=start, member=member, rank=rank, highlight=line, query=query)
        if query:
            results = logfiles.search(artifact, query, member=member, rank=rank,
                                      from_line=_int(request.GET.get("from"), 1, minimum=1))
    return render(request, "jobs/artifact_log.html", {
        "incident": incident, "artifact": artifact, "member": member, "members": members,
        "rank": rank, "query": query, "line": line, "page": page, "results": results,
    })


@login_required
def artifact_download(request, pk, artifact_pk):
    _, artifact = _artifact(request, pk, artifact_pk)
    try:
        handle = artifact.file.open("rb")
    except OSError as error:
        raise Http404("artifact file is missing") from error
    # as_attachment: the browser saves the file and never renders it as HTML.
    return FileResponse(handle, as_attachment=True, filename=artifact.original_name or f"artifact-{artifact.pk}",
                        content_type="application/octet-stream")
