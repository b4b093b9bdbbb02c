"""AsyncClient against the live server: the same calls as Client, awaited (each test runs its own event loop)."""

import asyncio
from datetime import datetime, timezone

import httpx
import pytest
from hakimem_client import AsyncClient, InvalidRequestError, NewFact, NotFoundError, UnavailableError

from facts.models import Fact as FactRow
from tests.clients.test_python_client import _Down, _DownOnce
from tests.conftest import PROJECT


def run(coro):
    return asyncio.run(coro)


def test_async_write_context_inspect(live_server, api_key):
    async def scenario():
        async with AsyncClient(live_server.url, api_key, project_id=PROJECT) as haki:
            # given facts written concurrently and an event
            facts = await asyncio.gather(
                haki.write_fact("dana", "Dana prefers window seats.", kind="preference"),
                haki.write_fact(
                    "dana", "Dana flies to Lisbon every spring.", valid_from=datetime(2023, 4, 1, tzinfo=timezone.utc)
                ),
            )
            await haki.write_event(
                "dana", "Dana missed her flight to Lisbon.", datetime(2025, 4, 3, tzinfo=timezone.utc)
            )
            # when
            packet = await haki.context("dana", "Where does Dana fly, which seat?")
            trace = await haki.inspect(packet.trace_id)
            listed = [f async for f in haki.iter_facts("dana", limit=1)]
            return facts, packet, trace, listed

    facts, packet, trace, listed = run(scenario())
    # then the packet renders as the server did, and the trace and the list agree with what was written
    assert packet.render() == packet.rendered and packet.rendered.startswith("<haki_memory>\nPreferences:")
    assert {f.id for f in packet.facts} == {f.id for f in facts} and len(packet.episodes) == 1
    assert {d.item_id for d in trace.decisions if d.decision == "included"} >= {f.id for f in facts}
    assert sorted(f.id for f in listed) == sorted(f.id for f in facts)


def test_async_batches_and_errors(live_server, api_key):
    sent = []

    async def record(request):
        sent.append(request.url.path)

    async def scenario():
        http = httpx.AsyncClient(base_url=live_server.url, event_hooks={"request": [record]})
        async with AsyncClient(live_server.url, api_key, project_id=PROJECT, http_client=http) as haki:
            written = await haki.write_facts([NewFact("erin", f"Erin has {i} cats.") for i in range(5)], batch_size=2)
            with pytest.raises(NotFoundError) as missing:
                await haki.retract_fact("00000000-0000-0000-0000-000000000000")
            with pytest.raises(InvalidRequestError) as invalid:
                await haki.context("erin", "   ")
            erased = await haki.erase_subject("erin")
            return written, missing.value, invalid.value, erased

    written, missing, invalid, erased = run(scenario())
    assert len(written) == 5 and sent[:3] == ["/v1/facts"] * 3
    assert (missing.status, missing.code) == (404, "not_found")
    assert invalid.code == "invalid_request" and [e["field"] for e in invalid.details["errors"]] == ["query"]
    assert erased.deleted and FactRow.objects.count() == 0


def test_async_retries_a_503_then_succeeds(live_server, api_key, monkeypatch):
    # given an embedder down for one request
    _DownOnce.calls = 0
    monkeypatch.setattr("facts.writes.get_embedder", lambda: _DownOnce(384))
    slept = []

    async def scenario():
        async with AsyncClient(live_server.url, api_key, project_id=PROJECT, backoff=0.01) as haki:

            async def sleep(seconds):
                slept.append(seconds)

            haki._sleep = sleep
            return await haki.write_fact("alice", "Alice keeps bees.")

    # when / then
    fact = run(scenario())
    assert len(slept) == 1 and FactRow.objects.get().id.hex == fact.id.replace("-", "")


def test_async_retries_are_bounded(live_server, api_key, monkeypatch):
    monkeypatch.setattr("facts.writes.get_embedder", lambda: _Down(384))

    async def scenario():
        async with AsyncClient(live_server.url, api_key, project_id=PROJECT, max_retries=1, backoff=0.01) as haki:
            await haki.write_fact("alice", "Alice keeps bees.")

    with pytest.raises(UnavailableError) as raised:
        run(scenario())
    assert (raised.value.status, raised.value.code) == (503, "embedder_unavailable")


def test_async_identity_blocks_and_procedures(live_server, api_key):
    async def scenario():
        async with AsyncClient(live_server.url, api_key, project_id=PROJECT) as haki:
            block = await haki.create_identity_block("dana", "persona", "Be brief.")
            changed = await haki.update_identity_block(block.id, position=3)
            listed = await haki.list_identity_blocks("dana")
            fetched = await haki.get_identity_block(block.id)
            await haki.delete_identity_block(block.id)
            procedure = await haki.write_procedure(None, "How we deploy", "Tag and run.")
            edited = await haki.update_procedure(procedure.id, importance=0.2)
            page = await haki.list_procedures("dana")
            got = await haki.get_procedure(procedure.id)
            retracted = await haki.retract_procedure(procedure.id)
            try:
                await haki.get_identity_block(block.id)
            except NotFoundError:
                gone = True
            return changed, listed, fetched, edited, page, got, retracted, gone

    changed, listed, fetched, edited, page, got, retracted, gone = run(scenario())
    assert changed.position == 3 and [b.id for b in listed] == [fetched.id] and gone
    assert edited.importance == 0.2 and [p.id for p in page] == [got.id] and retracted.status == "retracted"
