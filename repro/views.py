"""The incident page's live repro status (JSON polled by static/js/repro_runs.js)."""
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import get_object_or_404

from jobs.models import Incident
from repro.presenters import runs_for


@login_required
def runs_json(request, pk):
    incident = get_object_or_404(Incident.objects.visible_to(request.user), pk=pk)
    runs = runs_for(incident)
    return JsonResponse({"id": incident.pk, "runs": runs, "running": any(not run["finished"] for run in runs)})
