from django.apps import AppConfig


class HakimemConfig(AppConfig):
    name = "hakimem"
    verbose_name = "hakimem"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.contrib import admin
        from django.urls import register_converter

        from hakimem.validators import IdConverter

        register_converter(IdConverter, "id")  # before any URLconf is read: the apps' URLs use <id:...>
        from django.contrib.auth.signals import user_logged_in, user_login_failed

        from hakimem.ratelimit import LockoutAdminAuthenticationForm, login_failed, login_succeeded

        # The admin's sign-in refuses every password while a username or address is locked out.
        admin.site.login_form = LockoutAdminAuthenticationForm
        user_login_failed.connect(login_failed, dispatch_uid="hakimem.login_failed")
        user_logged_in.connect(login_succeeded, dispatch_uid="hakimem.login_succeeded")
        from hakimem import telemetry

        # Spans exported by OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (a gunicorn worker did it in post_fork).
        telemetry.setup()
