"""The root URLconf plus a plain Django view that raises, under /v1/ and elsewhere (test_error_contract.py)."""

from django.urls import path

from config.urls import handler400, handler403, handler404, handler500, urlpatterns as root  # noqa: F401


def crash(request):
    raise RuntimeError("a bug outside DRF")


urlpatterns = [path("v1/crash", crash), path("crash", crash), *root]
