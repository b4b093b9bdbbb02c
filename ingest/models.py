"""A batch of facts written by the task queue rather than in its request (ingest.writes): what GET /v1/jobs/{id}
reads. The items are kept until the job has run, then only its outcome."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models


class WriteJobStatus(models.TextChoices):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


class FactWriteJob(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project_id = models.CharField(max_length=128)
    subject_ids = ArrayField(
        models.CharField(max_length=128), help_text="The scopes its items write: erasure finds it."
    )
    status = models.CharField(max_length=16, choices=WriteJobStatus.choices, default=WriteJobStatus.PENDING)
    actor = models.CharField(max_length=200)
    items = models.JSONField(default=list, help_text="The validated items, until the job has run.")
    results = models.JSONField(default=list, help_text="Once done: per item, its fact's id and write flags.")
    error = models.JSONField(null=True, blank=True, help_text="Once failed: the API error the request would have had.")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["project_id", "created_at"], name="ingest_writejob_project")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=WriteJobStatus.values), name="ingest_writejob_status_valid"
            )
        ]
