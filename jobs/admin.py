"""Admin: teams and their members, incidents with artifacts and diagnosis, API keys (hashes only)."""
from django.contrib import admin

from jobs.models import ApiKey, Artifact, Diagnosis, Incident, Membership, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


class ArtifactInline(admin.TabularInline):
    model = Artifact
    extra = 0
    fields = ["kind", "original_name", "size", "sha256", "file"]
    readonly_fields = fields
    can_delete = False


@admin.register(Incident)
class IncidentAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "team", "status", "category", "failing_rank", "job_id", "created_at"]
    list_filter = ["status", "category", "team", "launcher"]
    search_fields = ["title", "job_id", "summary", "exception"]
    readonly_fields = ["created_at", "updated_at", "diagnosed_at", "idempotency_key"]
    list_select_related = ["team"]
    inlines = [ArtifactInline]


@admin.register(Diagnosis)
class DiagnosisAdmin(admin.ModelAdmin):
    list_display = ["incident", "category", "failing_rank", "engine_version", "fingerprint", "created_at"]
    list_filter = ["category", "engine_version"]
    search_fields = ["fingerprint", "incident__title"]
    readonly_fields = ["incident", "engine_version", "data", "category", "failing_rank", "fingerprint", "created_at"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "team", "name", "scope", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["scope", "team"]
    search_fields = ["prefix", "name"]
    readonly_fields = ["prefix", "hashed_key", "last_used_at", "created_at"]
