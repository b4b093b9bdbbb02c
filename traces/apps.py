from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "traces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # facts sits below traces and never imports it: traces hands it what it needs to know about traces.
        from facts.admin import register_decision_counts
        from facts.erasure import register_eraser, register_fact_eraser
        from traces.selectors import fact_decision_counts
        from traces.services import traces_erase, traces_erase_naming

        register_eraser("traces", traces_erase)
        register_fact_eraser("traces", traces_erase_naming)
        register_decision_counts(fact_decision_counts)
