"""Dashboard pages. Each view module belongs to one page family."""
from django.urls import path

from jobs.views import charts, incidents, keys, logs, upload

app_name = "jobs"

urlpatterns = [
    path("", incidents.incident_list, name="incident_list"),
    path("incidents/new/", upload.upload, name="upload"),
    path("incidents/<int:pk>/", incidents.incident_detail, name="incident_detail"),
    path("incidents/<int:pk>/status.json", incidents.incident_status, name="incident_status"),
    path("incidents/<int:pk>/timeline.json", charts.timeline_json, name="incident_timeline_json"),
    path("incidents/<int:pk>/memory.json", charts.memory_json, name="incident_memory_json"),
    path("incidents/<int:pk>/artifacts/<int:artifact_pk>/", logs.artifact_log, name="artifact_log"),
    path(
        "incidents/<int:pk>/artifacts/<int:artifact_pk>/download/",
        logs.artifact_download,
        name="artifact_download",
    ),
    path("settings/api-keys/", keys.api_keys, name="api_keys"),
    path("settings/api-keys/<int:key_pk>/revoke/", keys.revoke_api_key, name="revoke_api_key"),
]
