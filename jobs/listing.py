"""Lists from query parameters, written once for the pages and the API of jobs and knowledge.

- `query_filters`: the filter values a query string asks for, read through a form or serializer
  (blank values dropped, text stripped);
- `filter_rows`: those values applied to a queryset: exact fields, a date or time range, words;
- `page_of`: one page of rows, and the query string that keeps the filters across pages;
- `choices`: the distinct values a filter bar offers for a field.
"""
from __future__ import annotations

from datetime import date, datetime

from django.core.paginator import Page, Paginator

MAX_CHOICES = 200


def query_filters(form) -> dict:
    """The valid, non-blank values of a bound Django form or DRF serializer, text stripped.

    A serializer (the API) answers 400 for an invalid value; a form (a page) leaves that field out
    and keeps the others, so a mistyped date does not empty the list.
    """
    if hasattr(form, "initial_data"):  # a DRF serializer
        form.is_valid(raise_exception=True)
        data = form.validated_data
    else:
        form.is_valid()
        data = form.cleaned_data
    values = {name: value.strip() if isinstance(value, str) else value for name, value in data.items()}
    return {name: value for name, value in values.items() if value not in ("", None)}


def filter_rows(rows, values: dict, *, exact=(), time_field: str = "created_at"):
    """Rows whose `exact` fields equal the values given, made in [since, until] and matching `q`.

    A `since`/`until` that is a date compares with the day of `time_field`, a datetime with the
    moment itself; `q` goes to the queryset's own search().
    """
    for name in exact:
        if values.get(name):
            rows = rows.filter(**{name: values[name]})
    for name, lookup in (("since", "gte"), ("until", "lte")):
        bound = values.get(name)
        if isinstance(bound, datetime):
            rows = rows.filter(**{f"{time_field}__{lookup}": bound})
        elif isinstance(bound, date):
            rows = rows.filter(**{f"{time_field}__date__{lookup}": bound})
    if values.get("q"):
        rows = rows.search(values["q"])
    return rows


def page_of(request, rows, size: int) -> tuple[Page, str]:
    """The page the request asks for, and its query string without `page` (for the page links)."""
    page = Paginator(rows, size).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return page, query.urlencode()


def choices(rows, field: str) -> list[str]:
    """The distinct non-blank values of `field` in `rows`, sorted, at most MAX_CHOICES."""
    return list(rows.exclude(**{field: ""}).order_by(field).values_list(field, flat=True).distinct()[:MAX_CHOICES])
