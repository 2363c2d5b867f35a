from django.urls import path

from knowledge import views

app_name = "knowledge"

urlpatterns = [
    path("", views.problem_list, name="problem_list"),
    path("search/", views.search_page, name="search"),
    path("<int:pk>/", views.problem_detail, name="problem_detail"),
    path("<int:pk>/title/", views.problem_rename, name="problem_rename"),
    path("<int:pk>/merge/", views.problem_merge, name="problem_merge"),
    path("<int:pk>/split/", views.problem_split, name="problem_split"),
    path("changes/<int:pk>/undo/", views.action_undo, name="action_undo"),
    path("runbooks/", views.runbook_list, name="runbook_list"),
    path("runbooks/<slug:category>/", views.runbook_detail, name="runbook_detail"),
    path("transfer/", views.transfer_page, name="transfer"),
    path("transfer/export.json", views.export_download, name="export"),
]
