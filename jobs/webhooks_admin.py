"""Admin pages for webhook endpoints and the delivery log (imported from JobsConfig.ready)."""
from django.contrib import admin

from jobs.models import Incident, WebhookDelivery, WebhookEndpoint


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


class WebhookDeliveryInline(admin.TabularInline):
    model = WebhookDelivery
    extra = 0
    can_delete = False
    fields = ["url", "status", "attempts", "status_code", "error", "last_attempt_at", "delivered_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


# Deliveries also show on the incident's admin page (jobs.admin registers it before this module loads).
try:
    _incident_admin = admin.site.get_model_admin(Incident)
except admin.sites.NotRegistered:
    _incident_admin = None
if _incident_admin is not None and WebhookDeliveryInline not in _incident_admin.inlines:
    _incident_admin.inlines = [*_incident_admin.inlines, WebhookDeliveryInline]
