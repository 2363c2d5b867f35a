"""Placeholder: replaced by the page owner."""
from django.http import JsonResponse


def timeline_json(request, pk):
    return JsonResponse({})


def memory_json(request, pk):
    return JsonResponse({})
