"""API key authentication: `Authorization: Token trg_...` (or `Bearer trg_...`).

Keys belong to a team, not a person: request.user is an ApiKeyUser standing for the
team and request.auth is the ApiKey row. Only the SHA-256 of a key is stored; the
lookup is by that hash. last_used_at is written at most once a minute per key.
"""
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone
from django.utils.functional import cached_property
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from jobs.models import ApiKey
from jobs.models.api_keys import KEY_PREFIX, hash_key

LAST_USED_RESOLUTION = timedelta(minutes=1)
KEYWORDS = {b"token", b"bearer"}
# Failed key checks per client address per minute before they answer 429 instead of 401.
FAILED_ATTEMPTS_PER_MINUTE = 30


class ApiKeyUser:
    """The authenticated principal of an API request: the key's team, not a person."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key
        self.team = api_key.team
        self.username = f"api-key:{api_key.prefix}"

    def __str__(self) -> str:
        return self.username

    @cached_property
    def teams(self):
        from jobs.models import Team

        return Team.objects.filter(pk=self.team.pk)

    def has_perm(self, perm, obj=None) -> bool:
        return False


class ApiKeyAuthentication(BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in KEYWORDS:
            return None
        try:
            return self.check(parts)
        except exceptions.AuthenticationFailed:
            self.count_failure(request)
            raise

    def check(self, parts):
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Invalid Authorization header: expected 'Token <key>'.")
        try:
            raw_key = parts[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid API key.") from None
        if not raw_key.startswith(KEY_PREFIX):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        api_key = ApiKey.objects.select_related("team").filter(hashed_key=hash_key(raw_key)).first()
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid API key.")
        now = timezone.now()
        if api_key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This API key has been revoked.")
        if api_key.expires_at is not None and api_key.expires_at <= now:
            raise exceptions.AuthenticationFailed("This API key has expired.")
        self.touch(api_key, now)
        return ApiKeyUser(api_key), api_key

    @staticmethod
    def count_failure(request) -> None:
        """Guessing keys from one address gets 429 after a few failures a minute (valid keys still pass)."""
        from jobs.api.throttles import cache_call, client_ip

        cache_key = f"triage:auth-failures:{client_ip(request)}"  # X-Forwarded-For only behind NUM_PROXIES
        cache_call("add", cache_key, 0, timeout=60)
        try:
            failures = cache_call("incr", cache_key)
        except ValueError:  # expired between add and incr
            failures = 1
        if failures > FAILED_ATTEMPTS_PER_MINUTE:
            raise exceptions.Throttled(wait=60, detail="Too many failed API key checks; retry later.")

    def authenticate_header(self, request):
        # Makes DRF answer 401 (not 403) when credentials are missing or wrong.
        return self.keyword

    @staticmethod
    def touch(api_key: ApiKey, now) -> None:
        if api_key.last_used_at is not None and now - api_key.last_used_at < LAST_USED_RESOLUTION:
            return
        stale = now - LAST_USED_RESOLUTION
        ApiKey.objects.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=stale), pk=api_key.pk).update(
            last_used_at=now
        )
        api_key.last_used_at = now


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "jobs.api.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token trg_...` (or `Bearer trg_...`): a team API key.",
        }
