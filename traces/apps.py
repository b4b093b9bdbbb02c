from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "traces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from facts.services import register_eraser
        from traces.services import traces_erase

        register_eraser("traces", traces_erase)
