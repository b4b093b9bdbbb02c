"""HakimemRetriever (hakimem_client.langchain_retriever), LangChain's BaseRetriever on the client, against a live
server: a packet's items as documents with their metadata, the rendered block beside them, in a chain. No LLM."""

import asyncio
from datetime import datetime, timezone

import pytest
from hakimem_client import AsyncClient, Client
from hakimem_client.langchain_retriever import HakimemRetriever
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from tests.conftest import PROJECT


@pytest.fixture
def haki(live_server, api_key):
    with Client(live_server.url, api_key, project_id=PROJECT, backoff=0.01) as client:
        yield client


def test_documents_are_the_packets_items_with_their_metadata(haki):
    # given a preference, a fact and an episode of alice
    pref = haki.write_fact("alice", "Alice prefers green tea to coffee.", kind="preference")
    fact = haki.write_fact("alice", "Alice is allergic to peanuts.", category="health", metadata={"src": "form"})
    event = haki.write_event("alice", "Alice ordered a tea set online.", datetime(2025, 6, 2, 9, tzinfo=timezone.utc))
    retriever = HakimemRetriever(client=haki, subject_id="alice", budget_tokens=500)
    # when
    docs = retriever.invoke("What does Alice drink, tea? Any allergy?")
    # then each item is a document whose id, text and metadata are the packet's, all under the call's trace
    packet = haki.inspect(docs[0].metadata["trace_id"])
    assert all(isinstance(d, Document) for d in docs)
    assert [(d.metadata["type"], d.metadata["kind"]) for d in docs] == [
        ("fact", "preference"),
        ("fact", "fact"),
        ("episode", "episode"),
    ]
    assert [d.id for d in docs] == [d.metadata["id"] for d in docs] == [pref.id, fact.id, event.id]
    assert [d.page_content for d in docs] == [pref.text, fact.text, event.text]
    served = {d.item_id: d for d in packet.decisions if d.decision == "included"}
    assert {d.id for d in docs} == set(served) and len({d.metadata["trace_id"] for d in docs}) == 1
    assert all(d.metadata["score"] == pytest.approx(served[d.id].score) for d in docs)
    allergy = docs[1].metadata
    assert allergy["category"] == "health" and allergy["metadata"] == {"src": "form"} and allergy["tokens"] > 0
    assert allergy["reason_code"] and allergy["recorded_from"].startswith(str(datetime.now(timezone.utc).year))
    assert docs[2].metadata["occurred_at"] == "2025-06-02T09:00:00+00:00"


def test_the_rendered_block_is_the_servers(haki):
    # given a fact
    haki.write_fact("bob", "Bob is vegetarian.", kind="preference")
    retriever = HakimemRetriever(client=haki, subject_id="bob")
    # when the packet and the block runnable are asked
    packet = retriever.packet("What does Bob eat?")
    block = retriever.as_block().invoke("What does Bob eat?")
    # then both are the server's rendering
    assert packet.render().startswith("<haki_memory>\nPreferences:") and "Bob is vegetarian." in packet.render()
    assert block == packet.render() == haki.inspect(packet.trace_id).packet["rendered"]


def test_a_tiered_call_gives_identity_blocks_and_procedures_too(haki):
    # given an identity block, a procedure and a fact of carol
    block = haki.create_identity_block("carol", "persona", "You are Carol's travel assistant.")
    procedure = haki.write_procedure("carol", "Booking flights", "Book flights with an aisle seat for Carol.")
    haki.write_fact("carol", "Carol flies to Lisbon every spring.")
    retriever = HakimemRetriever(client=haki, subject_id="carol", context_options={"tiers": True})
    # when
    docs = retriever.invoke("Book Carol's flight to Lisbon")
    # then the identity block comes first, unscored, and the procedure last
    assert docs[0].id == block.id and docs[0].metadata["type"] == "identity" and docs[0].metadata["score"] is None
    assert docs[0].metadata["name"] == "persona"
    assert docs[-1].id == procedure.id and docs[-1].metadata["title"] == "Booking flights"
    assert any(d.metadata["type"] == "fact" and d.metadata["tier"] == "facts" for d in docs)


def test_an_empty_packet_gives_no_documents(haki):
    retriever = HakimemRetriever(client=haki, subject_id="nobody")
    assert retriever.invoke("What does this person like?") == []
    assert retriever.as_block().invoke("What does this person like?") == ""


def test_the_block_feeds_a_chains_prompt(haki):
    # given a chain whose prompt takes the block (no LLM: the prompt is the chain's output)
    haki.write_fact("dana", "Dana prefers window seats.", kind="preference")
    retriever = HakimemRetriever(client=haki, subject_id="dana")
    prompt = ChatPromptTemplate.from_messages([("system", "{memory}"), ("human", "{question}")])
    chain = {"memory": retriever.as_block(), "question": RunnablePassthrough()} | prompt
    # when / then the system message is the rendered block
    messages = chain.invoke("Which seat for Dana?").to_messages()
    assert messages[0].content.startswith("<haki_memory>") and "Dana prefers window seats." in messages[0].content
    assert messages[1].content == "Which seat for Dana?"


def test_the_async_retriever_answers_as_the_sync_one(live_server, api_key, haki):
    haki.write_fact("erin", "Erin moved to Porto last year.")

    async def scenario():
        async with AsyncClient(live_server.url, api_key, project_id=PROJECT) as aclient:
            retriever = HakimemRetriever(client=haki, aclient=aclient, subject_id="erin")
            return await retriever.ainvoke("Where does Erin live?"), await retriever.as_block().ainvoke("Erin")

    docs, block = asyncio.run(scenario())
    assert [d.page_content for d in docs] == ["Erin moved to Porto last year."] and "Porto" in block
