from django.urls import path

from context.apis import ContextApi

urlpatterns = [path("context", ContextApi.as_view(), name="context")]
