from django.apps import AppConfig


class ReproConfig(AppConfig):
    name = "repro"
    verbose_name = "Repro runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Connects the incident_finished receiver that queues the repro runs.
        from repro import receivers  # noqa: F401
