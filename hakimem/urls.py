from django.contrib import admin
from django.urls import include, path

from hakimem.apis import HealthApi

urlpatterns = [
    path("admin/", admin.site.urls),
    path("v1/health", HealthApi.as_view(), name="health"),
    path("v1/", include("facts.urls")),
    path("v1/", include("context.urls")),
    path("v1/", include("traces.urls")),
]

handler404 = "hakimem.errors.not_found_view"
