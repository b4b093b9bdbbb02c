from django.urls import path

from privacy import apis

urlpatterns = [
    path("subjects/<str:subject_id>", apis.SubjectEraseApi.as_view(), name="subject-erase"),
    path(
        "subjects/<str:subject_id>/consents/<str:category>",
        apis.SubjectConsentDetailApi.as_view(),
        name="subject-consent",
    ),
]
