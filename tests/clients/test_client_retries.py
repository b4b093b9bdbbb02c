"""Retry-After and the retry policy's edges. These use httpx.MockTransport, not the live server: the server
has no way to answer 429, or 503 with a Retry-After, on demand. The real 503 (embedder_unavailable) is retried
against the live server in test_python_client.py and test_async_client.py."""

import asyncio
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from hakimem_client import AsyncClient, Client, InvalidRequestError, RateLimitedError, UnavailableError
from hakimem_client.retries import parse_retry_after

FACT = {
    "id": "6f1c1d52-6a57-4f8b-9d4f-0d3f3e0e6b1a",
    "project_id": "p",
    "subject_id": "s",
    "text": "t",
    "status": "active",
    "metadata": {},
}


def error(status, code, retry_after=None):
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return httpx.Response(status, headers=headers, json={"error": {"code": code, "message": "m", "details": {}}})


def scripted(*answers):
    """A transport answering each request with the next of `answers` (a Response, or an exception to raise)."""
    sent = []
    queue = list(answers)

    def handle(request):
        sent.append(request.method)
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handle, sent


def client(handle, **kwargs):
    haki = Client("http://hakimem.test", "key", project_id="p", transport=httpx.MockTransport(handle), **kwargs)
    slept = []
    haki._sleep = slept.append
    return haki, slept


def test_a_503_with_retry_after_waits_that_long_then_succeeds():
    # given a server that answers 503 Retry-After: 2, then the fact
    handle, sent = scripted(error(503, "database_unavailable", "2"), httpx.Response(200, json=FACT))
    haki, slept = client(handle)
    # when
    fact = haki.get_fact(FACT["id"])
    # then the client waited exactly what the server asked, once
    assert fact.id == FACT["id"] and slept == [2.0] and sent == ["GET", "GET"]


def test_a_429_still_refused_after_the_retries_raises_rate_limited():
    # given a server that always answers 429 Retry-After: 1
    handle, sent = scripted(error(429, "rate_limited", "1"))
    haki, slept = client(handle, max_retries=3)
    # when / then four attempts, three waits of a second, then the error with the server's hint
    with pytest.raises(RateLimitedError) as raised:
        haki.write_fact("s", "t")
    assert len(sent) == 4 and slept == [1.0, 1.0, 1.0]
    assert (raised.value.status, raised.value.code, raised.value.retry_after) == (429, "rate_limited", 1.0)


def test_a_retry_after_longer_than_max_backoff_is_not_waited_for():
    handle, sent = scripted(error(429, "rate_limited", "120"))
    haki, slept = client(handle, max_backoff=30)
    with pytest.raises(RateLimitedError) as raised:
        haki.list_facts("s")
    assert len(sent) == 1 and slept == [] and raised.value.retry_after == 120.0


def test_other_errors_are_not_retried():
    handle, sent = scripted(error(400, "invalid_request"))
    haki, slept = client(handle)
    with pytest.raises(InvalidRequestError):
        haki.write_fact("s", "t")
    assert len(sent) == 1 and slept == []


def test_a_lost_connection_is_retried_only_for_calls_safe_to_repeat():
    # given a connection lost after the request was sent, then a good answer
    lost = httpx.ReadError("connection reset")
    handle, sent = scripted(lost, httpx.Response(200, json=FACT))
    haki, slept = client(handle)
    # when a read meets it, then it is retried
    assert haki.get_fact(FACT["id"]).id == FACT["id"] and sent == ["GET", "GET"]
    # when a write meets it, then it is not (the write may have been applied)
    handle, sent = scripted(lost, httpx.Response(201, json={"facts": [FACT]}))
    haki, slept = client(handle)
    with pytest.raises(UnavailableError) as raised:
        haki.write_fact("s", "t")
    assert sent == ["POST"] and raised.value.code == "connection_error"


def test_a_refused_connection_is_retried_even_for_writes():
    handle, sent = scripted(httpx.ConnectError("refused"), httpx.Response(201, json={"facts": [FACT]}))
    haki, slept = client(handle)
    assert haki.write_fact("s", "t").id == FACT["id"] and sent == ["POST", "POST"] and len(slept) == 1


def test_async_client_honours_retry_after():
    handle, sent = scripted(error(429, "rate_limited", "3"), httpx.Response(200, json=FACT))
    slept = []

    async def scenario():
        async with AsyncClient("http://hakimem.test", "key", transport=httpx.MockTransport(handle)) as haki:

            async def sleep(seconds):
                slept.append(seconds)

            haki._sleep = sleep
            return await haki.get_fact(FACT["id"])

    assert asyncio.run(scenario()).id == FACT["id"] and slept == [3.0] and sent == ["GET", "GET"]


def test_retry_after_as_an_http_date():
    later = datetime.now(timezone.utc) + timedelta(seconds=30)
    assert 28 <= parse_retry_after(format_datetime(later, usegmt=True)) <= 30
    assert parse_retry_after("soon") is None and parse_retry_after("-5") == 0.0
