from django.urls import path

from ingest import apis

urlpatterns = [
    path("events", apis.EventsApi.as_view(), name="events"),
]
