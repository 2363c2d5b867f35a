"""Admin: teams and their members, incidents with artifacts, diagnosis and webhook deliveries, API keys
(hashes only), webhook endpoints and the delivery log."""
from django.contrib import admin

from jobs.models import (
    ApiKey,
    Artifact,
    Diagnosis,
    Incident,
    Membership,
    Team,
    WebhookDelivery,
    WebhookEndpoint,
)


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


class WebhookDeliveryInline(admin.TabularInline):
    model = WebhookDelivery
    extra = 0
    can_delete = False
    fields = ["url", "status", "attempts", "status_code", "error", "last_attempt_at", "delivered_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Incident)
class IncidentAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "team", "status", "category", "failing_rank", "job_id", "created_at"]
    list_filter = ["status", "category", "team", "launcher"]
    search_fields = ["title", "job_id", "summary", "exception"]
    readonly_fields = ["created_at", "updated_at", "diagnosed_at", "idempotency_key"]
    list_select_related = ["team"]
    inlines = [ArtifactInline, WebhookDeliveryInline]


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


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ["url", "team", "active", "created_at"]
    list_filter = ["active", "team"]
    search_fields = ["url"]


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["incident", "url", "status", "attempts", "status_code", "last_attempt_at", "delivered_at"]
    list_filter = ["status", "event"]
    search_fields = ["url", "incident__job_id"]
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]
    list_select_related = ["incident"]
