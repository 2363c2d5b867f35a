"""Placeholder: replaced by the page owner."""
from django.http import HttpResponse


def artifact_log(request, pk, artifact_pk):
    return HttpResponse("")


def artifact_download(request, pk, artifact_pk):
    return HttpResponse("")
