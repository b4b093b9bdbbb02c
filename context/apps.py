from django.apps import AppConfig


class ContextConfig(AppConfig):
    name = "context"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # traces sits below context: the trace page's "Replay" buttons run the assembler through what is handed here.
        from context.replay import ReplayRefused, context_replay
        from traces.admin import register_replayer

        register_replayer(context_replay, refused=ReplayRefused)
