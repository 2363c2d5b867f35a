from django.urls import path

from knowledge import views

app_name = "knowledge"

urlpatterns = [
    path("", views.problem_list, name="problem_list"),
    path("<int:pk>/", views.problem_detail, name="problem_detail"),
]
