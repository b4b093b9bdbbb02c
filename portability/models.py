"""A re-embedding run's progress: where `manage.py reembed` resumes."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class ReembedRun(models.Model):
    """One `manage.py reembed`: the embedder it writes with and how far it got. Facts, then events, then
    procedures, each in id order; a batch's vectors and the cursor move in one transaction, so an interrupted run
    resumes exactly after its last committed batch (portability.reembed)."""

    provider = models.CharField(max_length=64)
    model = models.CharField(max_length=200, blank=True, default="")
    dimension = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    fact_cursor = models.UUIDField(null=True, blank=True, help_text="The last fact re-embedded, by id order.")
    facts_done = models.BooleanField(default=False)
    event_cursor = models.UUIDField(null=True, blank=True, help_text="The last event re-embedded, by id order.")
    events_done = models.BooleanField(default=False)
    procedure_cursor = models.UUIDField(null=True, blank=True, help_text="The last procedure re-embedded, by id order.")
    facts_embedded = models.PositiveIntegerField(default=0)
    events_embedded = models.PositiveIntegerField(default=0)
    procedures_embedded = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "facts_reembedrun"  # the table the store's migrations created: moved without a data move
        constraints = [
            models.CheckConstraint(
                name="reembed_finished_after_facts", condition=Q(finished_at__isnull=True) | Q(facts_done=True)
            ),
        ]

    def __str__(self) -> str:
        state = f"finished {self.finished_at:%Y-%m-%d %H:%M}" if self.finished_at else "unfinished"
        return f"reembed {self.pk} with {self.provider}/{self.model} ({state})"
