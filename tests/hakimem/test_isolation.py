"""What one tenant (project) can learn of another through what they share in a process or a table: the query
vector cache, /metrics, and the words' statistics the text rank weighs words by. docs/isolation.md says what each
test holds.

The cases come from an outside probe (issue 35, item 2)."""

import pytest
from django.db import connection
from prometheus_client.parser import text_string_to_metric_families

from facts.writes import FactInput, fact_create_batch
from tests.conftest import OTHER_PROJECT, PROJECT

pytestmark = pytest.mark.django_db

METRICS_TOKEN = "metrics-token-of-the-test"


@pytest.fixture
def metrics_on(settings):
    settings.HAKI_METRICS_TOKEN = METRICS_TOKEN


def series(client) -> dict[tuple, float]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")
    assert response.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
    }


def cache(before, after, result) -> float:
    key = ("hakimem_embed_query_cache_total", (("result", result),))
    return after.get(key, 0.0) - before.get(key, 0.0)


def ask(client, project, query):
    response = client.post("/v1/context", {"project_id": project, "subject_id": "alice", "query": query}, format="json")
    assert response.status_code == 200
    return response.json()


# --- the query vector cache -------------------------------------------------------------------------------------


def test_a_question_another_project_asked_is_no_cache_hit(api, other_api, client, metrics_on):
    # given project B asked a question (its vector is in the worker's cache)
    question = "Which instrument does the wombat keeper play?"
    ask(other_api, OTHER_PROJECT, question)
    before = series(client)
    # when project A asks the same words
    ask(api, PROJECT, question)
    after_first = series(client)
    # then the model made A's vector (a miss): nothing tells A that B asked it
    assert cache(before, after_first, "hit") == 0 and cache(before, after_first, "miss") == 1
    # while A asking again is a hit: the cache still serves a project's own repeats
    ask(api, PROJECT, question)
    assert cache(after_first, series(client), "hit") == 1


# --- /metrics ---------------------------------------------------------------------------------------------------


def test_metrics_are_a_404_while_no_token_is_set(client, settings):
    settings.HAKI_METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer wrong",
        f"Basic {METRICS_TOKEN}",
        f"Bearer {METRICS_TOKEN}x",
        f"Bearer {METRICS_TOKEN[:-1]}",
    ],
)
def test_metrics_need_the_token(client, metrics_on, authorization):
    headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization}
    response = client.get("/metrics", **headers)
    assert response.status_code == 401 and b"hakimem_" not in response.content
    assert response["WWW-Authenticate"].startswith("Bearer")


def _http_series(samples: dict) -> set:
    return {labels for (name, labels) in samples if name == "hakimem_http_request_duration_seconds_count"}


def test_invented_methods_and_paths_add_no_series(client, metrics_on):
    # given one request of an invented method and one to an unknown path (their series, once)
    client.generic("BREW", "/v1/facts")
    client.get("/no-such-page-0")
    before = _http_series(series(client))
    # when an anonymous client sends 30 invented methods and 30 invented paths
    for i in range(30):
        assert client.generic(f"INVENTED{i}", "/v1/facts").status_code < 500
        assert client.get(f"/no-such-page-{i}/{i}").status_code == 404
    # then no series was added: the methods are counted as "other", the paths as "unmatched"
    after = _http_series(series(client))
    assert after - before == set(), sorted(after - before)
    assert any(("method", "other") in labels for labels in after)


# --- the words' statistics --------------------------------------------------------------------------------------


def _text_ranks(client, project: str, query: str) -> dict[str, float]:
    """The text rank of each fact a context call of `project` considered, by its text, from the call's trace."""
    trace_id = ask(client, project, query)["trace_id"]
    decisions = client.get(f"/v1/inspect/{trace_id}").json()["decisions"]
    return {d["text"]: d["score_parts"]["text_rank"] for d in decisions if d["item_type"] == "fact"}


def _analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")


@pytest.fixture
def analyzed_facts(db):
    """ANALYZE inside the test's transaction: its statistics roll back with it, but the table's row estimate
    (pg_class.reltuples) is written in place and would outlive the test; the teardown analyses the table again
    without the test's rows, leaving the estimate as the test found it."""
    yield
    with connection.cursor() as cursor:
        for table in ("facts_conflictmember", "facts_conflictset", "facts_fact"):  # the writes opened sets
            cursor.execute(f"DELETE FROM {table} WHERE project_id IN (%s, %s)", [PROJECT, OTHER_PROJECT])
    _analyze()


def _facts(project: str, subject: str, texts: list[str]) -> None:
    fact_create_batch(items=[FactInput(project_id=project, subject_id=subject, text=t) for t in texts], actor="test")


def test_what_another_projects_words_move_in_a_text_rank(api, other_api, analyzed_facts):
    """An open channel, measured: the words' weights come from the whole table's statistics (pg_stats, through
    hakimem_table_stats), so another project's writes move this project's text rank, never its candidates' texts,
    similarities or recencies, and never bring the other project's rows. docs/isolation.md states the bound."""
    # given project A's facts holding one word of the question each, in a table of 1,002 facts
    _facts(PROJECT, "alice", ["Alice fed the wombat.", "Alice drew a pelican."])
    for i in range(2):
        _facts(PROJECT, f"filler-{i}", [f"Filler fact number {j} about gardening {i}." for j in range(500)])
    _analyze()
    before = _text_ranks(api, PROJECT, "wombat pelican")
    # when project B writes the word into 10 facts of its own (1 % of the table) ...
    _facts(OTHER_PROJECT, "bob", [f"Bob saw wombat number {i}." for i in range(10)])
    _analyze()
    some = _text_ranks(api, PROJECT, "wombat pelican")
    # ... and then into 10 more (the word is then in 21 of 1,022 rows: over 2 %)
    _facts(OTHER_PROJECT, "bob", [f"Bob saw wombat number {i}." for i in range(10, 20)])
    _analyze()
    more = _text_ranks(api, PROJECT, "wombat pelican")
    # then A's call still considers only A's facts ...
    assert set(before) == set(some) == set(more) == {"Alice fed the wombat.", "Alice drew a pelican."}
    # ... and B moved A's text rank: the wombat fact's share of the question fell from a half as the word grew
    # common, then to nothing once the word was in over 2 % of all facts (it leaves the question's words)
    assert before["Alice fed the wombat."] == pytest.approx(0.5, abs=0.01)
    assert 0.35 < some["Alice fed the wombat."] < 0.45
    assert more["Alice fed the wombat."] == pytest.approx(0.0, abs=1e-6)
    assert more["Alice drew a pelican."] == pytest.approx(1.0, abs=1e-6)
