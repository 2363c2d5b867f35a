from django.urls import include, re_path
from rest_framework.routers import SimpleRouter

from jobs.api.errors import not_found
from jobs.api.views import IncidentViewSet, WebhookEndpointViewSet

app_name = "api"

router = SimpleRouter()
router.register("incidents", IncidentViewSet, basename="incident")
router.register("webhooks", WebhookEndpointViewSet, basename="webhook")

urlpatterns = [
    re_path(r"", include(router.urls)),
    re_path(r"", not_found),
]
