from django.urls import path

from ingest import apis

urlpatterns = [
    path("events", apis.EventsApi.as_view(), name="events"),
    path("facts", apis.FactsApi.as_view(), name="facts"),
    path("jobs/<id:job_id>", apis.JobDetailApi.as_view(), name="job-detail"),
]
