from django.urls import path

from repro import views

app_name = "repro"

urlpatterns = [
    path("incidents/<int:pk>/runs.json", views.runs_json, name="runs_json"),
]
