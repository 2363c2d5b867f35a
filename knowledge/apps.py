from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge base"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # jobs never imports knowledge: a saved diagnosis reaches the knowledge base through this signal.
        from jobs.signals import diagnosis_saved
        from knowledge.signals import record_diagnosis

        diagnosis_saved.connect(record_diagnosis, dispatch_uid="knowledge.record_diagnosis")
