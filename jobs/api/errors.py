"""Every API error answers {"error": {"code", "message", "field"}}.

Validation errors also carry "fields": {name: [messages]} so that clients can show
all of them; "field" names the first one (null when the error is not about a field).
"""
from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation, TooManyFilesSent
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.views import exception_handler as drf_exception_handler


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request is too large."
    default_code = "too_large"


CODES = {
    400: "invalid",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "too_large",
    415: "unsupported_media_type",
    429: "throttled",
}


def error_body(code: str, message: str, field: str | None = None, **extra) -> dict:
    return {"error": {"code": code, "message": message, "field": field, **extra}}


def _first(detail):
    """The first (field, ErrorDetail) of a nested DRF error structure."""
    if isinstance(detail, dict):
        for name, value in detail.items():
            field, error = _first(value)
            if name == "non_field_errors":
                return field, error
            return (name if field is None else f"{name}.{field}"), error
    if isinstance(detail, list) and detail:
        return _first(detail[0])
    return None, detail


def _flatten(detail) -> dict:
    if not isinstance(detail, dict):
        return {}
    return {name: [str(item) for item in (value if isinstance(value, list) else [value])]
            for name, value in detail.items()}


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig | TooManyFilesSent):
        exc = PayloadTooLarge(str(exc) or PayloadTooLarge.default_detail)
    elif isinstance(exc, SuspiciousOperation):
        exc = exceptions.ParseError(str(exc))
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # a server error: Django's 500 handling and logging
    detail = exc.detail if isinstance(exc, exceptions.APIException) else response.data
    field, first = _first(detail)
    code = getattr(first, "code", None) or CODES.get(response.status_code, "error")
    if code == "invalid" and response.status_code != 400:
        code = CODES.get(response.status_code, "error")
    extra = {}
    if isinstance(exc, exceptions.ValidationError) and isinstance(detail, dict):
        extra["fields"] = _flatten(detail)
        if field == "non_field_errors":
            field = None
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        extra["retry_after"] = int(exc.wait + 0.999)
    response.data = error_body(code, str(first), field, **extra)
    return response


def not_found(request, *args, **kwargs):
    """JSON 404 for unknown paths under /api/v1/."""
    return JsonResponse(error_body("not_found", "No API endpoint at this path."), status=404)
