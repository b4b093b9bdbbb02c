from django.urls import path

from context.apis import ContextApi, ReplayApi

urlpatterns = [
    path("context", ContextApi.as_view(), name="context"),
    # under /v1/inspect/ with the trace it replays, though served here: a replay runs the assembler (traces is below
    # context in the layers, .importlinter)
    path("inspect/<id:trace_id>/replay", ReplayApi.as_view(), name="inspect-replay"),
]
