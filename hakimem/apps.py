from django.apps import AppConfig


class HakimemConfig(AppConfig):
    name = "hakimem"
    verbose_name = "hakimem"
    default_auto_field = "django.db.models.BigAutoField"
