"""Property tests (hypothesis) at the API's edge: whatever a client sends as an id, a text, metadata, a timestamp,
a query or a budget, the answer is a success or a 4xx in the error contract, never a 5xx, and a refused request
writes nothing. Bounded to EXAMPLES each; derandomized so a failure reproduces."""

import itertools
import json
from datetime import timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from facts.models import Event, Fact
from hakimem.validators import is_scope_id
from tests.conftest import PROJECT, error_code
from traces.models import Trace


def as_numbers(value):
    """JSON as its numbers' values: 3.788338345769359e+16 sent comes back as the integer 37883383457693590, the same
    number (PostgreSQL's jsonb keeps a number's decimal value, not the sender's float or int)."""
    return json.loads(json.dumps(value), parse_float=Decimal, parse_int=Decimal)


pytestmark = pytest.mark.django_db

EXAMPLES = 40
bounded = hypothesis_settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)

# Every code point, surrogates and U+0000 included (hypothesis leaves surrogates out unless asked).
any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None, exclude_categories=())
any_text = st.text(alphabet=any_char, max_size=60)
scope_like = st.from_regex(r"[A-Za-z0-9._:@-]{1,8}[\n\r\x00 ]?", fullmatch=True)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=40,
)


takes = itertools.count()


def deep(depth: int):
    value: dict = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def rows() -> tuple:
    return Fact.objects.count(), Event.objects.count(), Trace.objects.count()


def post(api, path, body):
    # json.dumps writes lone surrogates and U+0000 as \u escapes: the body is valid JSON, as a client's would be
    return api.generic("POST", path, json.dumps(body).encode(), content_type="application/json")


def outcome(response, before, *, ok: int) -> bool:
    """True when accepted; a refusal must be a 4xx in the contract that wrote nothing."""
    assert response.status_code < 500, response.content[:300]
    if response.status_code == ok:
        return True
    assert 400 <= response.status_code < 500 and error_code(response), response.content[:300]
    assert rows() == before
    return False


@bounded
@given(subject=any_text | scope_like)
def test_any_string_as_a_subject_id_is_a_scope_or_a_400(api, subject):
    before = rows()
    response = post(api, "/v1/facts", {"project_id": PROJECT, "subject_id": subject, "text": "Alice plays the cello."})
    accepted = outcome(response, before, ok=201)
    # accepted exactly when the id is well formed, and then stored as sent
    assert accepted == is_scope_id(subject)
    if accepted:
        assert response.json()["subject_id"] == subject
    response = post(api, "/v1/context", {"project_id": PROJECT, "subject_id": subject, "query": "cello"})
    assert outcome(response, rows(), ok=200) == is_scope_id(subject)


@bounded
@given(text=any_text)
def test_any_text_is_stored_as_sent_or_refused(api, text):
    before = rows()
    subject = f"s{next(takes)}"  # a scope of its own: no earlier example's fact can answer as a duplicate
    response = post(api, "/v1/facts", {"project_id": PROJECT, "subject_id": subject, "text": text})
    if outcome(response, before, ok=201):
        assert Fact.objects.get(id=response.json()["id"]).text == text
    response = post(
        api,
        "/v1/events",
        {"project_id": PROJECT, "subject_id": "alice", "text": text, "occurred_at": "2024-05-01T10:00:00Z"},
    )
    outcome(response, rows(), ok=201)
    response = post(api, "/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": text})
    outcome(response, rows(), ok=200)


@bounded
@given(metadata=json_values | st.integers(30, 40).map(deep))
def test_any_json_as_metadata_is_stored_as_sent_or_refused(api, metadata):
    before = rows()
    # a text of its own per example: the same text again would be answered by the first fact, with its metadata
    text = f"Alice plays the cello, take {next(takes)}."
    response = post(
        api, "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": text, "metadata": metadata}
    )
    if outcome(response, before, ok=201):
        assert isinstance(metadata, dict)
        assert as_numbers(Fact.objects.get(id=response.json()["id"]).metadata) == as_numbers(metadata)


@bounded
@given(
    moment=st.datetimes(timezones=st.builds(lambda m: timezone(timedelta(minutes=m)), st.integers(-1439, 1439))).map(
        lambda d: d.isoformat()
    )
    | any_text
)
def test_any_timestamp_is_stored_in_utc_or_refused(api, moment):
    before = rows()
    response = post(
        api,
        "/v1/events",
        {"project_id": PROJECT, "subject_id": "alice", "text": "Alice went to Porto.", "occurred_at": moment},
    )
    if outcome(response, before, ok=201):
        assert response.json()["occurred_at"].endswith("Z")
    response = api.get("/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "recorded_after": moment})
    outcome(response, rows(), ok=200)
    response = api.get("/v1/stats/overview", {"project_id": PROJECT, "until": moment})
    outcome(response, rows(), ok=200)


@bounded
@given(budget=json_values)
def test_any_budget_is_served_or_refused_with_budget_exceeded(api, budget):
    before = rows()
    response = post(
        api, "/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": "cello", "budget_tokens": budget}
    )
    if not outcome(response, before, ok=200):
        assert error_code(response) in ("budget_exceeded", "invalid_request")


@bounded
@given(raw=st.binary(max_size=80) | any_text.map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_body_bytes_answer_in_the_contract(api, raw):
    before = rows()
    for path in ("/v1/facts", "/v1/events", "/v1/context"):
        response = api.generic("POST", path, raw, content_type="application/json")
        assert not outcome(response, before, ok=201 if path != "/v1/context" else 200)
