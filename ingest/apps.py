from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "ingest"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from facts.erasure import register_eraser
        from ingest.services import extraction_jobs_erase

        register_eraser("extraction_jobs", extraction_jobs_erase)
