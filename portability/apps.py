from django.apps import AppConfig


class PortabilityConfig(AppConfig):
    name = "portability"
    default_auto_field = "django.db.models.BigAutoField"
