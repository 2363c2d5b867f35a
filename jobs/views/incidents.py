"""Placeholder: replaced by the page owner."""
from django.http import HttpResponse


def incident_list(request):
    return HttpResponse("incidents")


def incident_detail(request, pk):
    return HttpResponse("incident")


def incident_status(request, pk):
    return HttpResponse("{}")
