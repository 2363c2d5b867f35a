"""Per-key rate limits. Answer 429 with Retry-After (set by DRF from wait())."""
from rest_framework.throttling import SimpleRateThrottle

from jobs.models import ApiKey


def _ident(throttle, request) -> str:
    if isinstance(request.auth, ApiKey):
        return f"key-{request.auth.pk}"
    if request.user and request.user.is_authenticated:
        return f"user-{request.user.pk}"
    return f"ip-{throttle.get_ident(request)}"


class ApiKeyRateThrottle(SimpleRateThrottle):
    """Every request, counted per API key (per user for sessions, per address otherwise)."""

    scope = "api_key"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": _ident(self, request)}


class SubmitRateThrottle(SimpleRateThrottle):
    """Submissions only (POST), counted per key: they store files and start a diagnosis."""

    scope = "submit"

    def get_cache_key(self, request, view):
        if request.method != "POST":
            return None
        return self.cache_format % {"scope": self.scope, "ident": _ident(self, request)}
