from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    """Surfaces over the memory for agent stacks (the MCP server); it reads and writes through the other
    apps' services and selectors, so it sits above all of them."""

    name = "integrations"
    default_auto_field = "django.db.models.BigAutoField"
