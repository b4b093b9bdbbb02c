"""The client README's framework-adapter examples run as written against a live server, so that they stay true."""

import re
from pathlib import Path

from hakimem_client import Client

from tests.conftest import PROJECT

README = Path(__file__).resolve().parents[2] / "clients" / "python" / "README.md"


def adapter_examples() -> list[str]:
    section = README.read_text().split("## Framework adapters", 1)[1]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readmes_adapter_examples_run(live_server, api_key):
    store_example, retriever_example = adapter_examples()
    with Client(live_server.url, api_key, project_id=PROJECT) as haki:
        # given the client the README calls haki, and a fact for the retriever's question
        haki.write_fact("alice", "Alice is allergic to peanuts.", category="health")
        # when each example runs
        ran_store, ran_retriever = {"haki": haki}, {"haki": haki}
        exec(store_example, ran_store)
        exec(retriever_example, ran_retriever)
        forgotten = ran_store["store"].get(("alice", "food"), "tea")
    # then the store found its item by its query and forgot it, and the retriever served the fact and its block
    assert "tea" in [hit.key for hit in ran_store["hits"]] and forgotten is None
    assert ran_retriever["docs"][0].page_content == "Alice is allergic to peanuts."
    assert ran_retriever["block"].startswith("<haki_memory>") and "peanuts" in ran_retriever["block"]
