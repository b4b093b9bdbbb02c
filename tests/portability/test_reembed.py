"""manage.py reembed: every fact's, event's and procedure's vector computed again, in batches, resumable."""

import io
import uuid

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from facts.models import Event, Fact, FactStatus, Procedure
from facts.procedures import procedure_embedding_text
from hakimem.embeddings import HashingEmbedder, get_embedder
from portability.models import ReembedRun
from tests.facts.factories import EventFactory, FactFactory, ProcedureFactory

pytestmark = pytest.mark.django_db


def stale_store(n_facts: int, n_events: int) -> list:
    """Facts (one retracted) and events whose vectors come from another model: here, another text's. Ids in a
    known order (1, 2, ...): reembed walks facts, then events, by id."""
    stale = get_embedder().embed(["a vector some other model made"])[0]
    rows = [
        FactFactory(id=uuid.UUID(int=i + 1), text=f"Alice keeps note {i} about her garden.", embedding=stale)
        for i in range(n_facts)
    ] + [
        EventFactory(id=uuid.UUID(int=1000 + i), text=f"Alice planted tree {i}.", embedding=stale)
        for i in range(n_events)
    ]
    Fact.objects.filter(id=rows[0].id).update(status=FactStatus.RETRACTED, recorded_to=timezone.now())
    return rows


def is_fresh(row) -> bool:
    stored = type(row).objects.values_list("embedding", flat=True).get(id=row.id).to_numpy().astype(np.float32)
    return bool(np.allclose(stored, get_embedder().embed([row.text])[0], atol=1e-3))


def reembed(*args) -> str:
    out = io.StringIO()
    call_command("reembed", "--provider", "hashing", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


class Texts(list):
    fail_on: set[str]


@pytest.fixture
def embedded_texts(monkeypatch):
    """The texts the hashing provider is asked to embed, in order; `fail_on` makes it fail (a provider going
    down) when asked for one of those texts."""
    asked = Texts()
    fail_on: set[str] = set()
    encode = HashingEmbedder._encode

    def spy(self, texts):
        if fail_on & set(texts):
            raise RuntimeError("provider down")
        asked.extend(texts)
        return encode(self, texts)

    monkeypatch.setattr(HashingEmbedder, "_encode", spy)
    asked.fail_on = fail_on
    return asked


def test_an_interrupted_run_resumes_after_its_last_batch_and_a_finished_run_is_not_redone(embedded_texts):
    # given 20 facts and 5 events with stale vectors, and a provider that goes down at the second batch of 7
    rows = stale_store(20, 5)
    texts = {row.text for row in rows}
    ids_in_order = sorted(rows, key=lambda row: (isinstance(row, Event), row.id))
    embedded_texts.fail_on.add(ids_in_order[7].text)
    # when reembed runs
    with pytest.raises(CommandError, match="embedder failed.*rerun the same command to continue"):
        reembed("--batch-size", "7")
    # then the first batch has fresh vectors, the rest is untouched
    embedded_texts.fail_on.clear()  # the provider is back
    assert [is_fresh(row) for row in ids_in_order] == [True] * 7 + [False] * 18
    # when the same command runs again
    embedded_texts.clear()
    out = reembed("--batch-size", "7")
    # then it continues after the first batch: the other 18 rows, each embedded once, and all are fresh
    assert sorted(t for t in embedded_texts if t in texts) == sorted(row.text for row in ids_in_order[7:])
    assert all(is_fresh(row) for row in rows)
    assert "re-embedded 20 facts, 5 events and 0 procedures with hashing" in out
    run = ReembedRun.objects.get()
    assert run.finished_at is not None and (run.facts_embedded, run.events_embedded) == (20, 5)
    # when it runs once more
    embedded_texts.clear()
    out = reembed("--batch-size", "7")
    # then it does nothing
    assert "nothing to do" in out and not [t for t in embedded_texts if t in texts]
    assert ReembedRun.objects.count() == 1
    # unless asked to start again
    assert "re-embedded 20 facts, 5 events and 0 procedures" in reembed("--restart")
    assert ReembedRun.objects.count() == 2


def test_a_provider_of_another_dimension_is_refused_before_anything_is_written(settings):
    # given stale vectors, and the hashing provider configured to make 256-dimensional vectors
    rows = stale_store(3, 1)
    settings.HAKI_EMBED_DIM = 256
    # when reembed runs, then it names both sizes, and nothing changed
    with pytest.raises(
        CommandError,
        match=r"makes 256-dimensional vectors, but facts_event.embedding holds 384, "
        r"facts_fact.embedding holds 384, facts_procedure.embedding holds 384",
    ):
        reembed()
    assert not ReembedRun.objects.exists()
    settings.HAKI_EMBED_DIM = 384
    assert not any(is_fresh(row) for row in rows)


def test_a_text_edited_during_the_batch_keeps_the_vector_its_edit_computed(monkeypatch):
    # given a stale fact whose text the API edits while reembed is embedding the old text
    (fact,) = stale_store(1, 0)
    edited = "Alice sold her garden."
    edited_vector = get_embedder().embed([edited])[0]
    encode = HashingEmbedder._encode

    def edit_meanwhile(self, texts):
        if fact.text in texts:
            Fact.objects.filter(id=fact.id).update(text=edited, embedding=edited_vector)
        return encode(self, texts)

    monkeypatch.setattr(HashingEmbedder, "_encode", edit_meanwhile)
    # when reembed runs
    reembed()
    # then the edit's vector stays
    fact.refresh_from_db()
    assert fact.text == "Alice sold her garden." and is_fresh(fact)


def test_procedures_are_embedded_again_from_their_title_and_steps(embedded_texts):
    # given facts, an event and procedures with stale vectors
    stale = get_embedder().embed(["a vector some other model made"])[0]
    stale_store(2, 1)
    procedures = [
        ProcedureFactory(id=uuid.UUID(int=5000 + i), title=f"Deploy step {i}", embedding=stale) for i in range(3)
    ]
    # when reembed runs, in batches of 2
    out = reembed("--batch-size", "2")
    # then every procedure's vector is that of its title and steps, as the write path computes it
    for p in procedures:
        stored = Procedure.objects.values_list("embedding", flat=True).get(id=p.id).to_numpy().astype(np.float32)
        assert np.allclose(stored, get_embedder().embed([procedure_embedding_text(p.title, p.text)])[0], atol=1e-3)
    assert "re-embedded 2 facts, 1 events and 3 procedures" in out
    run = ReembedRun.objects.get()
    assert run.events_done and run.finished_at is not None and run.procedures_embedded == 3
