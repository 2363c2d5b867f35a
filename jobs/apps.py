from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Incidents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Connects the incident_finished receiver and registers the delivery task.
        from jobs import webhooks  # noqa: F401
