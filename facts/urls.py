from django.urls import path

from facts import apis

urlpatterns = [
    # GET and POST /v1/facts are ingest's: a heavy batch is written by the task queue (ingest/urls.py).
    path("facts/<id:fact_id>", apis.FactDetailApi.as_view(), name="fact-detail"),
    path("facts/<id:fact_id>/history", apis.FactHistoryApi.as_view(), name="fact-history"),
    # POST /v1/events (and its list) is ingest's: it queues the events' extraction (ingest/urls.py).
    path("events/<id:event_id>", apis.EventDetailApi.as_view(), name="event-detail"),
    path("conflicts", apis.ConflictsApi.as_view(), name="conflicts"),
    path("conflicts/<id:conflict_id>", apis.ConflictDetailApi.as_view(), name="conflict-detail"),
    path("conflicts/<id:conflict_id>/resolve", apis.ConflictResolveApi.as_view(), name="conflict-resolve"),
    # Erasing a subject and revoking a consent with its erasure reach every app: privacy/urls.py.
    path("subjects/<str:subject_id>/consents", apis.SubjectConsentsApi.as_view(), name="subject-consents"),
    path("project", apis.ProjectApi.as_view(), name="project"),
    path("identity-blocks", apis.IdentityBlocksApi.as_view(), name="identity-blocks"),
    path("identity-blocks/<id:block_id>", apis.IdentityBlockDetailApi.as_view(), name="identity-block-detail"),
    path("procedures", apis.ProceduresApi.as_view(), name="procedures"),
    path("procedures/<id:procedure_id>", apis.ProcedureDetailApi.as_view(), name="procedure-detail"),
]
