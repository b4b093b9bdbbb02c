from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from hakimem.apis import HealthApi, LivenessApi, ReadinessApi
from hakimem.observability import metrics_view
from hakimem.schema import SchemaView
from stats.urls import page_urlpatterns as stats_pages

# No public site to "view": the admin's header links to the /stats/ pages instead (templates/admin/base_site.html).
admin.site.site_url = None
# The curators' lists (facts, conflict sets, traces) are wide; the breadcrumbs and the index lead to the others.
admin.site.enable_nav_sidebar = False

urlpatterns = [
    path("admin/", admin.site.urls),
    path("v1/health", HealthApi.as_view(), name="health"),
    path("v1/health/live", LivenessApi.as_view(), name="health-live"),
    path("v1/health/ready", ReadinessApi.as_view(), name="health-ready"),
    path("metrics", metrics_view, name="metrics"),
    # The OpenAPI 3 schema (no key) and Swagger UI over it, its files served locally (drf-spectacular-sidecar), its
    # start-up script from /docs?script rather than inline, which the Content-Security-Policy refuses (hakimem/csp.py).
    path("v1/schema", SchemaView.as_view(), name="schema"),
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
    path("v1/", include("facts.urls")),
    path("v1/", include("ingest.urls")),
    path("v1/", include("privacy.urls")),
    path("v1/", include("context.urls")),
    path("v1/", include("traces.urls")),
    path("v1/", include("stats.urls")),
    path("stats/", include(stats_pages)),
]

handler404 = "hakimem.errors.not_found_view"
handler400 = "hakimem.errors.bad_request_view"
handler403 = "hakimem.errors.permission_denied_view"
handler500 = "hakimem.errors.server_error_view"
