"""The write jobs' answers (ingest/writes.py): POST /v1/facts's 202 and GET /v1/jobs/{id}."""

from __future__ import annotations

from rest_framework import serializers

from hakimem.serializers import iso
from ingest.models import FactWriteJob, WriteJobStatus


class JobFactSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="the fact written, or the active fact that answered the item")
    deduplicated = serializers.BooleanField()
    conflict_set_id = serializers.UUIDField(allow_null=True)


class JobErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="the error code the request would have answered with")
    message = serializers.CharField()
    details = serializers.DictField()


class FactWriteJobSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=WriteJobStatus.choices)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    facts = JobFactSerializer(many=True, help_text="once done: one per item, in order")
    error = JobErrorSerializer(allow_null=True, help_text="once failed: nothing was written")


class FactWriteJobAcceptedSerializer(serializers.Serializer):
    job = FactWriteJobSerializer()


def job_out(job: FactWriteJob) -> dict:
    return {
        "id": str(job.id),
        "status": job.status,
        "created_at": iso(job.created_at),
        "finished_at": iso(job.finished_at),
        "facts": job.results,
        "error": job.error,
    }
