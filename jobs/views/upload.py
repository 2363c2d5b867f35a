"""The upload page: files or a pasted log in, a queued incident out (HTML redirect or JSON for XHR)."""
import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import RequestDataTooBig, TooManyFilesSent
from django.http import JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from jobs.folderupload import BundledFolder, bundle
from jobs.forms import UploadForm
from jobs.models import Team
from jobs.uploads import UploadRejected, create_incident

# Room for the multipart envelope and the text fields around the files.
ENVELOPE_BYTES = 1024 * 1024


def wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def user_teams(user) -> list[Team]:
    """The user's teams, the first joined first (that one is the default)."""
    return list(Team.objects.of_member(user).order_by("memberships__created_at", "memberships__id"))


@csrf_exempt  # CSRF is checked by upload_page, after the size check, so an oversized body is never read
@login_required
def upload(request):
    if request.method == "POST":
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > settings.TRIAGE_UPLOAD_MAX_BYTES + ENVELOPE_BYTES:
            return rejected(request, UploadRejected(
                f"The upload is {declared} bytes; the limit is {settings.TRIAGE_UPLOAD_MAX_BYTES} bytes.",
                code="too_large", field="logs"), form=None)
        try:
            request.POST, request.FILES  # noqa: B018 - parse now, to answer limit errors clearly
        except TooManyFilesSent:
            return rejected(request, UploadRejected(
                f"Too many files: at most {settings.TRIAGE_UPLOAD_MAX_FILES} per upload.",
                code="too_many_files", field="logs"), form=None)
        except RequestDataTooBig:
            return rejected(request, UploadRejected(
                "The pasted text is too large: upload it as a file.", code="too_large", field="pasted_log"), form=None)
        except MultiPartParserError as exc:
            return rejected(request, UploadRejected(f"Malformed upload: {exc}", code="bad_field"), form=None)
    return upload_page(request)


@csrf_protect
def upload_page(request):
    teams = user_teams(request.user)
    if request.method != "POST":
        return render(request, "jobs/upload.html", {"form": UploadForm(teams=teams), "teams": teams})
    form = UploadForm(request.POST, request.FILES, teams=teams)
    if not teams:
        return rejected(request, UploadRejected("You are not on a team yet: ask a team admin to add you.",
                                                code="bad_field", field="team"), form=form, status=403)
    if not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        return rejected(request, UploadRejected(" ".join(errors), code="bad_field",
                                                field=None if field == "__all__" else field), form=form)
    data = form.cleaned_data
    workdir = Path(tempfile.mkdtemp(prefix="triage-folder-"))
    logs = []
    try:
        # A folder's files come with their relative paths (log_paths, in the order of the files).
        logs = bundle(data["logs"], request.POST.getlist("log_paths"), workdir)
        incident = create_incident(
            team=form.chosen_team(), user=request.user, logs=logs, command=data["command"],
            config=data["config"], data=data["data"], pasted_log=data["pasted_log"], meta=form.meta(),
        )
    except UploadRejected as exc:
        return rejected(request, exc, form=form)
    finally:
        for upload in logs:
            if isinstance(upload, BundledFolder):
                upload.close()
        shutil.rmtree(workdir, ignore_errors=True)
    url = reverse("jobs:incident_detail", args=[incident.pk])
    if wants_json(request):
        # Per-file notes from the upload service (an empty file ignored, ...), shown on the file's row.
        body = {"id": incident.pk, "url": url}
        if notes := list(getattr(incident, "upload_notes", None) or []):
            body["notes"] = notes
        return JsonResponse(body, status=201)
    return redirect(url)


def rejected(request, error: UploadRejected, *, form, status=None):
    status = status or error.status
    if wants_json(request):
        return JsonResponse({"error": error.as_dict()}, status=status)
    teams = user_teams(request.user)
    context = {"form": form or UploadForm(teams=teams), "teams": teams, "error": error}
    return render(request, "jobs/upload.html", context, status=status)
