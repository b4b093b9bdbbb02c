import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from hakimem.guard import charset_guard  # noqa: E402  (it needs the apps loaded)

application = charset_guard(django_application)
