from django.apps import AppConfig


class PortabilityConfig(AppConfig):
    name = "portability"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from portability import store_vectors  # noqa: F401 - registers the stored vectors' system check
