"""API keys: shown once, stored as a SHA-256 hash, found by a visible prefix."""
import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from jobs.models.teams import Team

KEY_PREFIX = "trg_"


def hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


class ApiKeyQuerySet(models.QuerySet):
    def usable(self):
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class ApiKey(models.Model):
    class Scope(models.TextChoices):
        READ = "read", "Read only"
        WRITE = "write", "Read and write"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    hashed_key = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=5, choices=Scope.choices, default=Scope.WRITE)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.team})"

    @classmethod
    def issue(cls, team, *, name="", scope=Scope.WRITE, expires_at=None, created_by=None):
        """Create a key and return (row, raw_key); the raw key is never stored."""
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(
            team=team, name=name, scope=scope, expires_at=expires_at, created_by=created_by,
            prefix=raw[: len(KEY_PREFIX) + 8], hashed_key=hash_key(raw),
        )
        return row, raw
