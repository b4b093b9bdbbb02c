"""`manage.py mcp` driven by the mcp package's own client: over stdio (the command spawned as a subprocess on
the test database, as an agent's host would start it) and over streamable HTTP (--http)."""

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from facts.models import Fact
from tests.conftest import OTHER_PROJECT, PROJECT

BASE_DIR = Path(__file__).resolve().parents[2]


def database_url() -> str:
    """The test database (test_postgres on the embedded server) as a DATABASE_URL for a subprocess."""
    db = connection.settings_dict
    auth = quote(db["USER"]) + (":" + quote(db["PASSWORD"]) if db["PASSWORD"] else "")
    port = f":{db['PORT']}" if db["PORT"] else ""
    host = f"?host={quote(db['HOST'])}" if db["HOST"].startswith("/") else ""
    netloc = f"{auth}@{'' if host else db['HOST']}{port}"
    return f"postgresql://{netloc}/{quote(db['NAME'])}{host}"


def server_env(api_key: str, **extra) -> dict:
    return {
        "DATABASE_URL": database_url(),
        "HAKI_EMBED_PROVIDER": "hashing",  # as the suite's autouse fixture sets for this process
        "HAKI_CONFLICT_POLICY": "curator",
        "HAKI_RECALL_MAX_DISTANCE": "0",
        "HAKI_DB_POOL_MAX": "0",
        "HAKI_MCP_API_KEY": api_key,
        **extra,
    }


def stdio_server(api_key: str, *args: str, **extra) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", *args], env=server_env(api_key, **extra), cwd=str(BASE_DIR)
    )


def text_of(result) -> str:
    return "".join(block.text for block in result.content)


def error_of(result) -> str:
    """A refused call's text without the mcp package's "Error executing tool <name>: " prefix:
    "<error code>: <message>"."""
    assert result.is_error, text_of(result)
    text = text_of(result)
    return text.split(": ", 1)[1] if text.startswith("Error executing tool ") else text


def structured(result) -> dict:
    data = result.structured_content
    return data.get("result", data) if isinstance(data, dict) and set(data) == {"result"} else data


async def remember_recall_inspect_forget(client: Client) -> dict:
    seen = {"tools": sorted(t.name for t in (await client.list_tools()).tools)}
    seen["remembered"] = structured(
        await client.call_tool("remember", {"text": "Alice is allergic to peanuts.", "category": "health"})
    )
    seen["elsewhere"] = structured(
        await client.call_tool("remember", {"text": "Bob is allergic to cats.", "subject_id": "bob"})
    )
    recall = await client.call_tool("recall", {"query": "What is Alice allergic to?"})
    seen["recall_text"], seen["recall"] = text_of(recall), structured(recall)
    seen["trace"] = structured(await client.call_tool("inspect", {"trace_id": seen["recall"]["trace_id"]}))
    seen["forgot"] = structured(await client.call_tool("forget", {"fact_id": seen["remembered"]["fact_id"]}))
    after = await client.call_tool("recall", {"query": "What is Alice allergic to?"})
    seen["recall_after"], seen["recall_after_why"] = text_of(after), structured(after)["empty_reason"]
    return seen


@pytest.mark.django_db(transaction=True)
def test_the_tools_over_stdio(api_key):
    # given `manage.py mcp` started over stdio with a key of PROJECT and the default subject alice
    async def session():
        async with Client(stdio_server(api_key, "--subject", "alice"), read_timeout_seconds=60) as client:
            return await remember_recall_inspect_forget(client)

    # when an agent remembers, recalls, inspects and forgets
    seen = asyncio.run(session())

    # then the four tools are offered, and each acted on the key's project and the right subject
    assert seen["tools"] == ["forget", "inspect", "recall", "remember"]
    alice = Fact.objects.get(id=seen["remembered"]["fact_id"])
    assert (alice.project_id, alice.subject_id, alice.category) == (PROJECT, "alice", "health")
    assert Fact.objects.get(id=seen["elsewhere"]["fact_id"]).subject_id == "bob"
    # the recall's text is the rendered block, the same the REST API renders for that trace
    assert seen["recall_text"] == seen["recall"]["rendered"]
    assert seen["recall_text"].startswith("<haki_memory>") and "Alice is allergic to peanuts." in seen["recall_text"]
    assert "Bob" not in seen["recall_text"]
    assert seen["trace"]["packet"]["rendered"] == seen["recall_text"]
    assert [d["item_id"] for d in seen["trace"]["decisions"] if d["decision"] == "included"] == [str(alice.id)]
    # forget retracted the fact: the next recall serves nothing, as the empty string
    assert seen["forgot"]["status"] == "retracted" and Fact.objects.get(id=alice.id).status == "retracted"
    assert seen["recall_after"] == "" and seen["recall_after_why"] == "scope_empty"
    assert seen["recall"]["empty_reason"] is None


@pytest.mark.django_db(transaction=True)
def test_refusals_carry_the_error_contracts_codes(api_key):
    async def session():
        async with Client(stdio_server(api_key), read_timeout_seconds=60) as client:
            calls = {
                "no_subject": ("recall", {"query": "anything"}),
                "blank_text": ("remember", {"text": "   ", "subject_id": "alice"}),
                "budget": ("recall", {"query": "anything", "subject_id": "alice", "budget_tokens": 0}),
                "unknown_fact": ("forget", {"fact_id": "00000000-0000-0000-0000-000000000000"}),
                "not_a_uuid": ("inspect", {"trace_id": "nope"}),
            }
            out = {}
            for name, (tool, arguments) in calls.items():
                result = await client.call_tool(tool, arguments)
                out[name] = error_of(result)
            return out

    # given a server with no default subject / when each bad call is made
    out = asyncio.run(session())
    # then each is an error result naming the REST API's code
    assert out["no_subject"].startswith("invalid_request:") and "subject_id" in out["no_subject"]
    assert out["blank_text"].startswith("invalid_request:") and "(text: " in out["blank_text"]
    assert out["budget"].startswith("budget_exceeded:")
    assert out["unknown_fact"].startswith("not_found:")
    assert out["not_a_uuid"].startswith("invalid_request:") and "trace_id" in out["not_a_uuid"]
    assert Fact.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_another_projects_fact_cannot_be_forgotten(api_key, other_key):
    # given a fact of the other project, written through its own server
    async def write_then_forget():
        async with Client(stdio_server(other_key, "--subject", "alice"), read_timeout_seconds=60) as other:
            fact_id = structured(await other.call_tool("remember", {"text": "Alice keeps bees."}))["fact_id"]
        async with Client(stdio_server(api_key, "--subject", "alice"), read_timeout_seconds=60) as mine:
            result = await mine.call_tool("forget", {"fact_id": fact_id})
        return fact_id, result

    # when this project's server is asked to forget it
    fact_id, result = asyncio.run(write_then_forget())
    # then it answers as if the fact did not exist, and the fact stays
    assert error_of(result).startswith("not_found:")
    fact = Fact.objects.get(id=fact_id)
    assert (fact.project_id, fact.status) == (OTHER_PROJECT, "active")


@pytest.mark.django_db(transaction=True)
def test_a_bad_key_stops_the_server_at_start():
    # given / when
    run = subprocess.run(
        [sys.executable, "manage.py", "mcp"],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        env={**os.environ, **server_env("not-a-key")},
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    # then it exits with the reason, having written nothing on stdout (the protocol's channel)
    assert run.returncode != 0 and "Unknown or revoked API key" in run.stderr and run.stdout == ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.django_db(transaction=True)
def test_the_tools_over_streamable_http(api_key):
    # given `manage.py mcp --http` on a free loopback port
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "mcp", "--http", "--port", str(port), "--subject", "alice"],
        cwd=BASE_DIR,
        env={**os.environ, **server_env(api_key)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the MCP server did not listen in time"
            time.sleep(0.2)

        async def session():
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as client:
                return await remember_recall_inspect_forget(client)

        # when
        seen = asyncio.run(session())
    finally:
        process.terminate()
        process.wait(timeout=30)
    # then the same tools behave as over stdio
    assert seen["tools"] == ["forget", "inspect", "recall", "remember"]
    assert seen["recall_text"].startswith("<haki_memory>") and seen["recall_after"] == ""
    assert Fact.objects.get(id=seen["remembered"]["fact_id"]).status == "retracted"


@pytest.mark.django_db
def test_a_tool_call_runs_under_row_security_seeing_only_the_keys_project(api_key):
    # given facts in two projects
    from integrations.mcp_server import MemoryTools
    from tests.facts.factories import FactFactory

    FactFactory(project_id=PROJECT, text="Alice likes tea.")
    FactFactory(project_id=OTHER_PROJECT, text="Bob likes coffee.")
    # when code inside a tool call forgets its project filter
    with MemoryTools(api_key).as_key():
        seen = set(Fact.objects.values_list("project_id", flat=True))
    # then the database itself showed only the key's project, and the role is the connecting user's again
    assert seen == {PROJECT}
    assert set(Fact.objects.values_list("project_id", flat=True)) == {PROJECT, OTHER_PROJECT}


@pytest.mark.django_db(transaction=True)
def test_a_tiered_recall_serves_the_identity_blocks_first(api_key):
    # given a project-wide persona and a fact of alice
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    assert (
        api.post(
            "/v1/identity-blocks",
            {"project_id": PROJECT, "name": "persona", "text": "You are Alice's cooking assistant."},
            format="json",
        ).status_code
        == 201
    )
    assert (
        api.post(
            "/v1/facts",
            {"project_id": PROJECT, "subject_id": "alice", "text": "Alice is allergic to peanuts."},
            format="json",
        ).status_code
        == 201
    )

    async def session():
        async with Client(stdio_server(api_key, "--subject", "alice"), read_timeout_seconds=60) as client:
            plain = text_of(await client.call_tool("recall", {"query": "What is Alice allergic to?"}))
            tiered = text_of(await client.call_tool("recall", {"query": "What is Alice allergic to?", "tiers": True}))
            return plain, tiered

    # when an agent recalls, plainly then with tiers
    plain, tiered = asyncio.run(session())
    # then only the tiered recall carries the persona, on top, before the fact
    assert "cooking assistant" not in plain and "Alice is allergic to peanuts." in plain
    assert tiered.splitlines()[:3] == ["<haki_memory>", "<identity>", "You are Alice's cooking assistant."]
    assert "- Alice is allergic to peanuts." in tiered
