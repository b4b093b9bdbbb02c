from django.urls import path

from traces.apis import InspectApi

urlpatterns = [path("inspect/<id:trace_id>", InspectApi.as_view(), name="inspect")]
