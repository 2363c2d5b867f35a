"""Placeholder: replaced by the page owner."""
from django.http import HttpResponse


def api_keys(request):
    return HttpResponse("")


def revoke_api_key(request, key_pk):
    return HttpResponse("")
