"""A context call without a usable embedder: ranked by text then recency, with a warning; writes refused."""

import numpy as np
import pytest
from django.utils import timezone

from hakimem.embeddings import HashingEmbedder
from tests.conftest import PROJECT, error_code
from tests.context.calls import ask, decisions
from tests.facts.factories import FactFactory

pytestmark = pytest.mark.django_db


class _Broken(HashingEmbedder):
    def _encode(self, texts):
        raise ConnectionError("down")


class _Zero(HashingEmbedder):
    def _encode(self, texts):
        return np.zeros((len(texts), 384))


@pytest.mark.parametrize(
    "embedder, warning", [(_Broken(384), "embedder_unavailable"), (_Zero(384), "degenerate_query_vector")]
)
def test_degraded_paths_rank_by_text_then_recency(api, monkeypatch, embedder, warning, caplog):
    old = timezone.now() - timezone.timedelta(days=60)
    FactFactory(text="Alice's favourite band is Portishead.", recorded_from=old, last_confirmed_at=old)
    FactFactory(text="Alice bought a new kettle.")
    monkeypatch.setattr("context.assembler.get_embedder", lambda: embedder)
    packet = ask(api, "favourite band")
    assert packet["status"] == "degraded" and packet["warnings"] == [warning]
    assert packet["facts"][0]["text"] == "Alice's favourite band is Portishead."
    assert warning.replace("_", " ").split()[0] in caplog.text
    nothing_matches = ask(api, "zzzz qqqq")
    assert [f["text"] for f in nothing_matches["facts"]] == [
        "Alice bought a new kettle.",
        "Alice's favourite band is Portishead.",
    ]
    assert all(d.similarity is None for d in decisions(nothing_matches).values())


def test_a_failing_embedder_refuses_writes_but_not_reads(api, monkeypatch):
    monkeypatch.setattr("facts.writes.get_embedder", lambda: _Broken(384))
    response = api.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": "Something."}, format="json"
    )
    assert response.status_code == 503 and error_code(response) == "embedder_unavailable"
