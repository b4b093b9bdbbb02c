"""Procedures go through the two-phase hybrid path of facts and episodes (context.retrieval.procedure_candidates):
found by their words and by meaning, the subject's own and the project's, never a retracted one or another
scope's."""

import pytest
from django.db import connection
from django.utils import timezone

from context import retrieval
from facts.selectors import volatility_cutoffs
from hakimem.embeddings import get_embedder
from hakimem.rowsecurity import API_ROLE, scope_enter
from tests.conftest import OTHER_PROJECT, PROJECT
from tests.facts.factories import ProcedureFactory

pytestmark = pytest.mark.django_db


def _procedures(query, subject="alice", *, degraded=False):
    now = timezone.now()
    lookup = retrieval.lookup_for(
        project_id=PROJECT, subject_id=subject, query=query, now=now, cutoffs=volatility_cutoffs(now)
    )
    return retrieval.procedure_candidates(
        lookup, qvec=None if degraded else get_embedder().embed_query(query, project_id=lookup.project_id)
    )


@pytest.fixture(params=["exact", "graph"])
def dense_path(request, monkeypatch):
    """Both statements of the dense leg: the exact sort of a small scope and the hnsw walk of a large one."""
    monkeypatch.setattr(retrieval.TableStats, "dense_exact", lambda self, *a, **k: request.param == "exact")
    return request.param


@pytest.fixture
def procedures():
    return {
        "deploy": ProcedureFactory(
            title="Deployment checklist", text="Tag the release, run the pipeline, watch the dashboards."
        ),
        "reports": ProcedureFactory(
            title="How Alice likes reports", text="Short paragraphs, a summary first, no jargon."
        ),
        "wide": ProcedureFactory(
            subject_id="", title="Expense claims", text="Scan the receipt and file it in Ledgerly."
        ),
        "retracted": ProcedureFactory(
            title="Old deployment checklist", text="Copy the files by FTP.", status="retracted"
        ),
        "bob": ProcedureFactory(subject_id="bob", title="Bob's deployment checklist", text="Ask Bob."),
        "other": ProcedureFactory(
            project_id=OTHER_PROJECT, subject_id="", title="Deployment checklist elsewhere", text="Another project's."
        ),
    }


def test_a_procedure_is_found_by_its_words(procedures, dense_path):
    found = _procedures("Where do I file a receipt in Ledgerly?")
    assert found[0].id == procedures["wide"].id  # a project-wide procedure, matched by its rare words
    assert found[0].text_rank > 0 and found[0].similarity > 0
    assert {c.id for c in found} == {procedures[k].id for k in ("deploy", "reports", "wide")}


def test_a_procedure_is_found_by_meaning_without_sharing_a_word(procedures, dense_path):
    # "deploying" is not a word of any procedure (the full-text index does not stem): only the vectors relate them
    found = _procedures("deploying")
    assert found[0].id == procedures["deploy"].id
    assert found[0].text_rank == 0 and found[0].similarity > max(c.similarity for c in found[1:])


def test_retracted_and_other_scopes_procedures_are_never_candidates(procedures, dense_path):
    found = {c.id for c in _procedures("deployment checklist")}
    assert procedures["retracted"].id not in found
    assert procedures["bob"].id not in found and procedures["other"].id not in found
    bobs = {c.id for c in _procedures("deployment checklist", subject="bob")}
    assert bobs == {procedures["bob"].id, procedures["wide"].id}


def test_a_candidate_carries_what_packing_needs(procedures):
    candidate = next(c for c in _procedures("reports") if c.id == procedures["reports"].id)
    stored = procedures["reports"]
    assert (candidate.title, candidate.text, candidate.category, candidate.importance, candidate.metadata) == (
        stored.title,
        stored.text,
        "",
        0.5,
        {},
    )
    assert candidate.updated_at == stored.updated_at and 0.99 < candidate.recency <= 1.0
    assert candidate.distance == pytest.approx(1 - candidate.similarity) and candidate.score == 0.0


def test_without_a_query_vector_word_matches_come_first_then_the_latest_edited(procedures):
    found = _procedures("Ledgerly receipts", degraded=True)
    assert found[0].id == procedures["wide"].id and found[0].similarity is None and found[0].text_rank > 0
    assert [c.id for c in found[1:]] == [procedures["reports"].id, procedures["deploy"].id]


def test_a_procedure_without_a_usable_vector_ranks_as_unrelated():
    # "!!!" has no word: the hashing embedder gives it a vector of zeros, which cosine cannot rank
    blank = ProcedureFactory(title="!!!", text="???")
    found = _procedures("checklist")
    assert [c.id for c in found] == [blank.id] and found[0].distance == 1.0 and found[0].similarity == 0.0


def test_the_procedures_statistics_are_read_under_row_security(procedures):
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_procedure")
    scope_enter(API_ROLE, PROJECT)  # as a request runs (rolled back with the test's transaction)
    stats = retrieval._read_table_stats(retrieval.PROCEDURES)
    assert stats.rows == 6
    assert stats.term_freq.get("checklist", 0) > 0
    assert stats.scope_rows("alice", project_wide=True) > stats.scope_rows("alice")
