from django.apps import AppConfig


class StatsConfig(AppConfig):
    name = "stats"
    default_auto_field = "django.db.models.BigAutoField"
