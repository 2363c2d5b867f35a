"""The knowledge base's REST routes under /api/v1/ (config.urls includes them before jobs.api.urls)."""
from django.urls import include, path
from rest_framework.routers import SimpleRouter

from knowledge import api

app_name = "knowledge-api"

router = SimpleRouter()
router.register("problems", api.ProblemViewSet, basename="problem")
router.register("knowledge/changes", api.GroupingActionViewSet, basename="change")

urlpatterns = [
    path("", include(router.urls)),
    path("knowledge/search/", api.SearchView.as_view(), name="search"),
    path("knowledge/incidents/<int:incident_id>/", api.RecognitionView.as_view(), name="recognition"),
    path("knowledge/runbooks/<slug:category>/", api.RunbookView.as_view(), name="runbook"),
    path("knowledge/export/", api.ExportView.as_view(), name="export"),
    path("knowledge/import/", api.ImportView.as_view(), name="import"),
]
