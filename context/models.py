"""What context keeps of its own: how far consolidation (context/consolidation.py) has gone in each project."""

from __future__ import annotations

from django.db import models

from hakimem.validators import SCOPE_ID_MAX


class ConsolidationMark(models.Model):
    """The start of a project's last consolidation: the next one reads what query time decided since then
    (less CONSOLIDATION_OVERLAP), unless told --since. A dry run moves nothing."""

    project_id = models.CharField(primary_key=True, max_length=SCOPE_ID_MAX)
    consolidated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.project_id} consolidated {self.consolidated_at:%Y-%m-%d %H:%M}"
