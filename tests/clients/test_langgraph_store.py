"""HakimemStore (hakimem_client.langgraph_store), LangGraph's BaseStore on the client, against a live server: the
mapping of namespaces to subjects, items to facts, and what hakimem's memory adds (versions, de-duplication,
conflicts, ranking by POST /v1/context); then a LangGraph graph using it as its store. No LLM."""

import asyncio
import operator
from typing import Annotated, TypedDict

import httpx
import pytest
from hakimem_client import AsyncClient, Client
from hakimem_client.langgraph_store import HakimemStore
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, PutOp, SearchItem

from tests.clients.test_python_client import BORDEAUX, NANTES
from tests.conftest import PROJECT


@pytest.fixture
def haki(live_server, api_key):
    with Client(live_server.url, api_key, project_id=PROJECT, backoff=0.01) as client:
        yield client


@pytest.fixture
def store(haki):
    return HakimemStore(haki, text_fields=["text"])


def test_an_item_is_a_fact_of_the_namespaces_subject(store, haki):
    # given an item put in a folder of alice's namespace
    store.put(("alice", "food"), "tea", {"text": "Alice prefers green tea to coffee.", "source": "chat"})
    # when it is read back by its key, and alice's facts are listed through the client
    item = store.get(("alice", "food"), "tea")
    facts = haki.list_facts("alice").items
    # then the item is the value put, and it is one fact of subject alice carrying the item in its metadata
    assert isinstance(item, Item) and item.value == {"text": "Alice prefers green tea to coffee.", "source": "chat"}
    assert item.namespace == ("alice", "food") and item.key == "tea" and item.created_at == item.updated_at
    assert [f.text for f in facts] == ["Alice prefers green tea to coffee."]
    assert facts[0].metadata["langgraph"]["items"][0]["key"] == "tea"
    # and another key, another folder or another subject finds nothing
    assert store.get(("alice", "food"), "coffee") is None
    assert store.get(("alice", "work"), "tea") is None and store.get(("bob", "food"), "tea") is None


def test_a_new_text_under_a_key_is_a_new_version_and_the_same_text_edits_in_place(store, haki):
    # given an item
    store.put(("alice",), "home", {"text": "Alice lives in a flat in Lyon."})
    first = haki.list_facts("alice").items[0]
    # when the same text is put with another value, then a new text
    store.put(("alice",), "home", {"text": "Alice lives in a flat in Lyon.", "floor": 3})
    in_place = haki.list_facts("alice").items
    store.put(("alice",), "home", {"text": "Alice lives in a flat in Lyon near the river."})
    # then the first edit kept the fact, the second made a new version whose history holds both texts
    assert [f.id for f in in_place] == [first.id] and in_place[0].metadata["langgraph"]["items"][0]["value"][
        "floor"
    ] == 3
    item = store.get(("alice",), "home")
    now = haki.list_facts("alice", status="active").items
    assert item.value == {"text": "Alice lives in a flat in Lyon near the river."} and item.updated_at > item.created_at
    assert len(now) == 1 and now[0].id != first.id and haki.get_fact(first.id).status == "superseded"
    assert [v.text for v in haki.fact_history(now[0].id)] == [first.text, now[0].text]


def test_delete_retracts_the_fact(store, haki):
    # given an item
    store.put(("alice",), "pet", {"text": "Alice has a cat called Miso."})
    fact_id = haki.list_facts("alice").items[0].id
    # when it is deleted
    store.delete(("alice",), "pet")
    # then it is gone for the store, and retracted for hakimem (never served again)
    assert store.get(("alice",), "pet") is None
    assert haki.get_fact(fact_id).status == "retracted"
    assert haki.context("alice", "Does Alice have a cat?").facts == []


def test_items_with_the_same_text_share_one_fact_until_the_last_is_deleted(store, haki):
    # given two keys put with the same text (hakimem keeps one fact per meaning)
    store.put(("alice",), "k1", {"text": "Alice is allergic to peanuts.", "from": "form"})
    store.put(("alice",), "k2", {"text": "Alice is allergic to peanuts.", "from": "chat"})
    # then both keys find it, each with its own value, on one fact
    facts = haki.list_facts("alice").items
    assert len(facts) == 1 and len(facts[0].metadata["langgraph"]["items"]) == 2
    assert store.get(("alice",), "k1").value["from"] == "form" and store.get(("alice",), "k2").value["from"] == "chat"
    # when one key is deleted, the fact stays for the other; when the last is, the fact is retracted
    store.delete(("alice",), "k1")
    assert store.get(("alice",), "k1") is None and store.get(("alice",), "k2") is not None
    assert haki.get_fact(facts[0].id).status == "active"
    store.delete(("alice",), "k2")
    assert haki.get_fact(facts[0].id).status == "retracted"


def test_search_with_a_query_is_hakimems_ranked_packet(store, haki):
    # given items in two folders of alice and one of bob
    store.put(("alice", "health"), "allergy", {"text": "Alice is allergic to peanuts.", "severity": 3})
    store.put(("alice", "health"), "sport", {"text": "Alice runs five kilometres every morning.", "severity": 0})
    store.put(("alice", "work"), "job", {"text": "Alice works at the bakery on Rue Neuve."})
    store.put(("bob",), "allergy", {"text": "Bob is allergic to peanuts."})
    # when alice's memory is searched with a query
    found = store.search(("alice",), query="What is Alice allergic to, peanuts?", limit=10)
    # then the results are the context packet's facts, in its score order, with its scores
    packet = haki.context("alice", "What is Alice allergic to, peanuts?", budget_tokens=store.search_budget_tokens)
    assert all(isinstance(i, SearchItem) for i in found) and found[0].key == "allergy"
    assert [i.score for i in found] == sorted((f.score for f in packet.facts), reverse=True)
    assert {i.namespace for i in found} <= {("alice", "health"), ("alice", "work")}
    # and a folder prefix, a value filter, offset and limit narrow it
    in_health = store.search(("alice", "health"), query="peanuts allergy running")
    assert {i.key for i in in_health} == {"allergy", "sport"}
    assert [i.key for i in store.search(("alice", "health"), query="peanuts", filter={"severity": {"$gt": 1}})] == [
        "allergy"
    ]
    assert len(store.search(("alice",), query="Alice", limit=1)) == 1
    assert [i.key for i in store.search(("alice",), query="Alice", offset=1)] == [i.key for i in found[1:]]


def test_search_without_a_query_lists_newest_first(store):
    # given three items, put in order
    for n in range(3):
        store.put(("alice", "notes"), f"n{n}", {"text": f"Alice wrote note number {n} about gardening.", "n": n})
    # when / then they come newest first, filterable, without a score
    listed = store.search(("alice", "notes"))
    assert [i.key for i in listed] == ["n2", "n1", "n0"] and {i.score for i in listed} == {None}
    assert [i.key for i in store.search(("alice",), filter={"n": {"$lte": 1}}, limit=1)] == ["n1"]


def test_a_contradiction_stays_readable_and_is_not_served_until_resolved(store, haki):
    # given two items that contradict each other (hakimem opens a conflict set)
    store.put(("paul",), "home", {"text": NANTES})
    store.put(("paul",), "home-now", {"text": BORDEAUX})
    conflict = haki.list_conflicts(subject_id="paul", status="open").items
    # then get finds both, a search with a query serves neither, as every context call would
    assert len(conflict) == 1
    assert store.get(("paul",), "home").value["text"] == NANTES and store.get(("paul",), "home-now") is not None
    assert store.search(("paul",), query="Where does Paul live?") == []


def test_facts_written_by_other_means_are_items_of_the_subjects_root(store, haki):
    # given a fact written through the REST API, not the store
    fact = haki.write_fact("alice", "Alice speaks Portuguese.", category="languages")
    # when / then it is an item of ("alice",), its key the fact id
    item = store.get(("alice",), fact.id)
    assert item.value == {"text": "Alice speaks Portuguese.", "category": "languages", "kind": "fact"}
    assert [i.key for i in store.search(("alice",), query="Which language does Alice speak?")] == [fact.id]
    assert store.search(("alice", "food"), query="Which language does Alice speak?") == []
    # and deleting that item retracts the fact: a delete is a forget
    store.delete(("alice",), fact.id)
    assert haki.get_fact(fact.id).status == "retracted"


def test_subject_label_reads_the_subject_elsewhere_in_the_namespace(haki):
    # given a store for namespaces shaped ("memories", user)
    store = HakimemStore(haki, subject_label=1, text_fields=["text"])
    # when an item is put for carol
    store.put(("memories", "carol"), "m1", {"text": "Carol collects vinyl records."})
    # then it is a fact of subject carol, and a prefix that does not name the subject is refused
    assert [f.text for f in haki.list_facts("carol").items] == ["Carol collects vinyl records."]
    assert store.search(("memories", "carol"), query="records")[0].key == "m1"
    with pytest.raises(InvalidNamespaceError):
        store.search(("memories",), query="records")
    # and a fact written by other means is listed in the root namespace, unless a wildcard leaves the root unknown
    haki.write_fact("carol", "Carol lives in Ghent.")
    assert store.list_namespaces(prefix=("memories", "carol")) == [("memories", "carol")]
    assert store.list_namespaces(prefix=("*", "carol")) == [("memories", "carol")]


def test_list_namespaces_within_a_subject(store):
    # given items in three folders of alice
    for folder in ("food", "work", "travel"):
        store.put(("alice", folder, "2026"), folder, {"text": f"Alice has a note about {folder} this year."})
    # when / then her namespaces are listed, by prefix, suffix and depth; a listing without a subject is refused
    assert store.list_namespaces(prefix=("alice",)) == [
        ("alice", "food", "2026"),
        ("alice", "travel", "2026"),
        ("alice", "work", "2026"),
    ]
    assert store.list_namespaces(prefix=("alice", "w")) == []
    assert store.list_namespaces(prefix=("alice",), max_depth=2, limit=2) == [("alice", "food"), ("alice", "travel")]
    assert store.list_namespaces(prefix=("alice", "*", "2026"), suffix=("2026",), offset=2) == [
        ("alice", "work", "2026")
    ]
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces(suffix=("2026",))


def test_one_batch_lists_a_subject_once_and_runs_its_operations_in_order(live_server, api_key):
    # given a store whose client records its requests
    sent = []
    http = httpx.Client(event_hooks={"request": [lambda r: sent.append((r.method, r.url.path))]})
    with Client(live_server.url, api_key, project_id=PROJECT, http_client=http) as haki:
        store = HakimemStore(haki, text_fields=["text"])
        # when a put and two gets go in one batch
        results = store.batch(
            [
                PutOp(("dana",), "seat", {"text": "Dana prefers window seats."}),
                GetOp(("dana",), "seat"),
                GetOp(("dana",), "meal"),
            ]
        )
    http.close()
    # then the get sees the put, and dana's facts were listed once for the three operations
    assert results[0] is None and results[1].value == {"text": "Dana prefers window seats."} and results[2] is None
    assert sent == [("GET", "/v1/facts"), ("POST", "/v1/facts")]


def test_the_async_store_answers_as_the_sync_one(live_server, api_key, haki):
    async def scenario():
        async with AsyncClient(live_server.url, api_key, project_id=PROJECT) as aclient:
            store = HakimemStore(haki, aclient=aclient, text_fields=["text"])
            await store.aput(("erin",), "city", {"text": "Erin moved to Porto last year."})
            return await store.aget(("erin",), "city"), await store.asearch(("erin",), query="Where does Erin live?")

    item, found = asyncio.run(scenario())
    assert item.value == {"text": "Erin moved to Porto last year."} and [i.key for i in found] == ["city"]


class Turn(TypedDict):
    user: str
    said: str
    recalled: Annotated[list[str], operator.add]


def remember(state: Turn) -> dict:
    get_store().put((state["user"], "chat"), "latest", {"text": state["said"]})
    return {}


def recall(state: Turn) -> dict:
    return {"recalled": [i.value["text"] for i in get_store().search((state["user"],), query=state["said"])]}


def test_a_langgraph_graph_remembers_through_the_store(store):
    # given a graph of two nodes (no LLM) compiled with the store
    graph = StateGraph(Turn)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=store)
    # when a turn runs
    out = app.invoke({"user": "frank", "said": "Frank is learning to play the cello.", "recalled": []})
    # then the node wrote frank's memory in hakimem and the next node recalled it through a context call
    assert out["recalled"] == ["Frank is learning to play the cello."]
    assert store.get(("frank", "chat"), "latest").value == {"text": "Frank is learning to play the cello."}
