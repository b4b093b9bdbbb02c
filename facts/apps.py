from django.apps import AppConfig


class FactsConfig(AppConfig):
    name = "facts"
    default_auto_field = "django.db.models.BigAutoField"
