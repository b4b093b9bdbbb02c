from django.apps import AppConfig


class ContextConfig(AppConfig):
    name = "context"
    default_auto_field = "django.db.models.BigAutoField"
