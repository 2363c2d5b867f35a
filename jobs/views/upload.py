"""Placeholder: replaced by the page owner."""
from django.http import HttpResponse


def upload(request):
    return HttpResponse("")
