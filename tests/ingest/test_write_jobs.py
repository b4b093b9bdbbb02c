"""A heavy batch of facts through POST /v1/facts: accepted as a job (202), written by the task queue's worker
all-or-nothing, its outcome told by GET /v1/jobs/{id}. Every test runs on committed data (the worker has its own
connections)."""

from __future__ import annotations

import pytest
from django.db import connection

from facts.models import Fact
from ingest.management.commands.extraction_worker import STALLED_AFTER, run_worker, stalled_jobs_retry
from ingest.models import FactWriteJob
from ingest.writes import QUEUE
from privacy.services import subject_erase
from tests.conftest import OTHER_PROJECT, PROJECT, make_client

SUBJECT = "heavy"


@pytest.fixture
def client(transactional_db, settings):
    settings.HAKI_WRITE_JOB_CHARS = 500  # a batch of two long facts is heavy
    return make_client(PROJECT)


def long_fact(n: int, **fields) -> dict:
    text = f"Fact number {n}: " + " ".join(f"Alice visited museum {n}-{i} in Lyon." for i in range(12))
    return {"project_id": PROJECT, "subject_id": SUBJECT, "text": text, **fields}


def post(client, facts: list[dict]):
    return client.post("/v1/facts", {"facts": facts}, format="json")


def job_of(client, job_id: str) -> dict:
    response = client.get(f"/v1/jobs/{job_id}")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_heavy_batch_is_accepted_as_a_job_and_written_by_the_worker(client):
    # given a batch over HAKI_WRITE_JOB_CHARS
    facts = [long_fact(n) for n in range(5)]
    # when it is posted, then it is accepted as a pending job and nothing is written yet
    response = post(client, facts)
    assert response.status_code == 202, response.content
    job = response.json()["job"]
    assert response["Location"] == f"/v1/jobs/{job['id']}"
    assert job["status"] == "pending" and job["facts"] == [] and job["error"] is None
    assert job_of(client, job["id"])["status"] == "pending"
    assert not Fact.objects.filter(project_id=PROJECT, subject_id=SUBJECT).exists()
    # when the worker runs
    run_worker(once=True, queues=(QUEUE,))
    # then the job is done with one fact per item, in order, and the facts are the scope's
    done = job_of(client, job["id"])
    assert done["status"] == "done" and done["finished_at"] and done["error"] is None
    stored = {str(f.id): f.text for f in Fact.objects.filter(project_id=PROJECT, subject_id=SUBJECT)}
    assert [stored[f["id"]] for f in done["facts"]] == [f["text"] for f in facts]
    assert all(f["deduplicated"] is False for f in done["facts"])
    # and the job keeps no text once it has run
    assert FactWriteJob.objects.get(id=job["id"]).items == []


def test_a_light_batch_is_still_written_in_its_request(client):
    response = post(client, [{"project_id": PROJECT, "subject_id": SUBJECT, "text": "Alice lives in Lyon."}])
    assert response.status_code == 201, response.content
    assert response.json()["facts"][0]["text"] == "Alice lives in Lyon."
    assert not FactWriteJob.objects.exists()


def test_an_invalid_heavy_batch_is_refused_in_its_request(client):
    response = post(client, [long_fact(1), long_fact(2, importance=3)])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert not FactWriteJob.objects.exists()


def test_a_job_refused_by_the_store_fails_with_the_error_and_writes_nothing(client):
    # given a project whose category list the batch's second item breaks (checked under the scopes' locks)
    from facts.models import Project

    Project.objects.update_or_create(project_id=PROJECT, defaults={"categories": ["travel"]})
    response = post(client, [long_fact(1, category="travel"), long_fact(2, category="cooking")])
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]["id"]
    # when the worker runs
    run_worker(once=True, queues=(QUEUE,))
    # then the job failed with the error the request would have had, and nothing was written
    failed = job_of(client, job_id)
    assert failed["status"] == "failed" and failed["facts"] == []
    assert failed["error"]["code"] == "invalid_request"
    assert failed["error"]["details"]["errors"][0]["index"] == 1
    assert not Fact.objects.filter(project_id=PROJECT, subject_id=SUBJECT).exists()


def test_a_job_is_seen_by_its_project_only(client):
    job_id = post(client, [long_fact(n) for n in range(3)]).json()["job"]["id"]
    other = make_client(OTHER_PROJECT)
    assert other.get(f"/v1/jobs/{job_id}").status_code == 404
    assert client.get("/v1/jobs/00000000-0000-0000-0000-000000000000").json()["error"]["code"] == "not_found"


def test_erasing_the_subject_deletes_its_pending_job_which_then_writes_nothing(client):
    job_id = post(client, [long_fact(n) for n in range(3)]).json()["job"]["id"]
    receipt = subject_erase(project_id=PROJECT, subject_id=SUBJECT)
    assert receipt["write_jobs"] == 1
    run_worker(once=True, queues=(QUEUE,))
    assert client.get(f"/v1/jobs/{job_id}").status_code == 404
    assert not Fact.objects.filter(project_id=PROJECT, subject_id=SUBJECT).exists()


def _stall(job_row_id: int, *, heartbeat_age_s: int) -> None:
    """The queue's job as a worker killed in the middle of it leaves it: `doing`, fetched by a worker whose last
    heartbeat is `heartbeat_age_s` old."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - make_interval(secs => %s)) RETURNING id",
            [heartbeat_age_s],
        )
        worker_id = cursor.fetchone()[0]
        cursor.execute(
            "UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s WHERE id = %s", [worker_id, job_row_id]
        )


def _queued_job_id() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM procrastinate_jobs WHERE queue_name = %s", [QUEUE])
        (row,) = cursor.fetchall()
    return row[0]


def test_a_job_its_worker_died_in_is_run_again_by_the_next_worker(client):
    # given a job whose worker was killed in the middle of it (its transaction rolled back: the job still pending)
    job_id = post(client, [long_fact(n) for n in range(3)]).json()["job"]["id"]
    _stall(_queued_job_id(), heartbeat_age_s=STALLED_AFTER + 60)
    # when the next worker starts
    run_worker(once=True, queues=(QUEUE,))
    # then the job is run again, and done
    assert job_of(client, job_id)["status"] == "done"
    assert Fact.objects.filter(project_id=PROJECT, subject_id=SUBJECT).count() == 3


def test_a_job_whose_worker_still_beats_is_left_to_it(client):
    # given a job in the hands of a worker that sent its heartbeat a moment ago
    job_id = post(client, [long_fact(n) for n in range(3)]).json()["job"]["id"]
    queued = _queued_job_id()
    _stall(queued, heartbeat_age_s=1)
    # when another worker starts, then the job is not taken from it
    assert stalled_jobs_retry((QUEUE,)) == []
    run_worker(once=True, queues=(QUEUE,))
    assert job_of(client, job_id)["status"] == "pending"
    # and once that worker's heartbeat is too old, the job is queued again
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE procrastinate_workers SET last_heartbeat = now() - make_interval(secs => %s)", [STALLED_AFTER + 1]
        )
    assert stalled_jobs_retry((QUEUE,)) == [queued]
