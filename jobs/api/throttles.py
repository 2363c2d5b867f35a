"""Per-key rate limits. Answer 429 with Retry-After (set by DRF from wait()).

The counters live in the shared cache (Redis). When it is unreachable, a request must still be
answered: the throttles count in a per-process memory cache instead ("fallback" in CACHES)
until Redis answers again, so reads never depend on Redis.
"""
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

from jobs.cache import cache_call  # noqa: F401 - also used by the failed-key limiter
from jobs.models import ApiKey


def client_ip(request) -> str:
    """The client's address, trusting X-Forwarded-For only for REST_FRAMEWORK["NUM_PROXIES"] hops.

    Shared by the API limiters, the failed-key limiter and django-axes' login throttling.
    """
    return BaseThrottle().get_ident(getattr(request, "_request", request))


class _FallbackCache:
    """The slice of the cache API SimpleRateThrottle uses, with the fallback."""

    def get(self, key, default=None):
        return cache_call("get", key, default)

    def set(self, key, value, timeout=None):
        return cache_call("set", key, value, timeout)


def _ident(throttle, request) -> str:
    if isinstance(request.auth, ApiKey):
        return f"key-{request.auth.pk}"
    if request.user and request.user.is_authenticated:
        return f"user-{request.user.pk}"
    return f"ip-{throttle.get_ident(request)}"


class ApiKeyRateThrottle(SimpleRateThrottle):
    """Every request, counted per API key (per user for sessions, per address otherwise)."""

    scope = "api_key"
    cache = _FallbackCache()

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": _ident(self, request)}


class SubmitRateThrottle(SimpleRateThrottle):
    """Submissions only (POST), counted per key: they store files and start a diagnosis."""

    scope = "submit"
    cache = _FallbackCache()

    def get_cache_key(self, request, view):
        if request.method != "POST":
            return None
        return self.cache_format % {"scope": self.scope, "ident": _ident(self, request)}
