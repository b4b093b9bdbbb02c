from django.apps import AppConfig


class StatsConfig(AppConfig):
    name = "stats"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The rollup sums traces: an erasure of traces takes their share out of it (stats/rollup.py).
        from facts.erasure import register_fact_eraser
        from stats.rollup import rollup_erase, rollup_erase_facts
        from traces.services import register_before_erase

        register_before_erase("stats", rollup_erase)
        register_fact_eraser("stats", rollup_erase_facts)
