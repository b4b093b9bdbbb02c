"""The house: migrations, catalog objects, embedders, API keys, the error contract, health."""

import http.server
import io
import json
import threading

import numpy as np
import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from facts.models import Fact
from hakimem.embeddings import (
    EmbedderUnavailable,
    EmbeddingDimensionError,
    HashingEmbedder,
    OpenAICompatibleEmbedder,
    get_embedder,
    is_degenerate,
)
from hakimem.services import api_key_revoke
from hakimem.models import ApiKey
from tests.conftest import PROJECT, error_code
from tests.facts.factories import EventFactory, FactFactory

pytestmark = pytest.mark.django_db


# --- migrations and catalog ---------------------------------------------------------------------------


def test_models_and_migrations_agree():
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


def test_vector_extension_and_generated_search_columns_exist():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert cursor.fetchone()[0].startswith("0.8")
        cursor.execute(
            "SELECT table_name, is_generated, generation_expression FROM information_schema.columns"
            " WHERE column_name = 'search_vector' ORDER BY table_name"
        )
        rows = cursor.fetchall()
    assert [r[0] for r in rows] == ["facts_event", "facts_fact", "facts_procedure"]
    for _, generated, expression in rows:
        assert generated == "ALWAYS"
        assert "to_tsvector('simple'" in expression


@pytest.mark.parametrize(
    "name, fragments",
    [
        ("facts_fact_embedding_hnsw", ["USING hnsw", "halfvec_cosine_ops", "WHERE"]),
        ("facts_fact_search_gin", ["USING gin", "search_vector"]),
        ("facts_fact_scope_status", ["btree", "project_id", "subject_id", "status"]),
        ("facts_event_embedding_hnsw", ["USING hnsw", "halfvec_cosine_ops"]),
        ("facts_event_search_gin", ["USING gin"]),
    ],
)
def test_indexes_exist(name, fragments):
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        row = cursor.fetchone()
    assert row is not None, name
    for fragment in fragments:
        assert fragment in row[0]


def test_generated_column_follows_the_text():
    fact = FactFactory(text="Camille adopted a grey cat named Pixel.")
    with connection.cursor() as cursor:
        cursor.execute("SELECT search_vector::text FROM facts_fact WHERE id = %s", [fact.id])
        vector = cursor.fetchone()[0]
    assert "'pixel'" in vector and "'camille'" in vector


def test_every_fact_and_event_holds_its_scope_lexeme_and_no_word_matches_it():
    fact = FactFactory(text="Camille adopted a grey cat named Pixel.")
    event = EventFactory(subject_id=fact.subject_id, text="Camille called the vet about scope 3.")
    for table, row in (("facts_fact", fact), ("facts_event", event)):
        with connection.cursor() as cursor:
            cursor.execute(
                f"""SELECT search_vector @@ hakimem_scope_query(%(p)s, %(s)s),
                                      search_vector @@ hakimem_scope_query(%(p)s, %(s)s || 'x'),
                                      search_vector @@ hakimem_scope_query(%(p)s || 'x', %(s)s),
                                      search_vector @@ to_tsquery('simple', 'scope'),
                                      search_vector @@ (to_tsquery('simple', 'camille') && hakimem_scope_query(%(p)s, %(s)s))
                                 FROM {table} WHERE id = %(id)s""",
                {"p": row.project_id, "s": row.subject_id, "id": row.id},
            )
            assert cursor.fetchone() == (True, False, False, table == "facts_event", True), table


@pytest.mark.parametrize(
    "overrides",
    [
        {"importance": 1.5},
        {"status": "archived"},
        {"text": ""},
        {"volatility": "sometimes"},
        {"metadata": ["not", "an", "object"]},
    ],
)
def test_database_constraints_refuse_invalid_rows(overrides):
    with pytest.raises(IntegrityError), transaction.atomic():
        FactFactory(**overrides)


def test_validity_must_be_ordered():
    from django.utils import timezone

    now = timezone.now()
    with pytest.raises(IntegrityError), transaction.atomic():
        FactFactory(valid_from=now, valid_to=now - timezone.timedelta(days=1))


def test_one_active_fact_per_normalised_text_in_a_scope():
    FactFactory(text="Paul likes tea.")
    with pytest.raises(IntegrityError), transaction.atomic():
        FactFactory(text="paul  LIKES tea")
    FactFactory(text="Paul likes tea.", subject_id="someone-else")  # other scope: allowed


# --- embedders ----------------------------------------------------------------------------------------


def test_hashing_embedder_is_deterministic_and_normalised():
    embedder = HashingEmbedder(384)
    a, b = embedder.embed(["Léa lives in Lyon", "Léa lives in Lyon"])
    assert np.allclose(a, b)
    assert abs(np.linalg.norm(a) - 1.0) < 1e-5
    near, far = embedder.embed(["Léa lives in Lyon now", "The invoice total is 42 euros"])
    assert float(a @ near) > float(a @ far)


def test_degenerate_vectors_are_detected():
    assert is_degenerate(np.zeros(384))
    assert is_degenerate(np.array([]))
    assert is_degenerate(np.array([np.nan] * 384))
    assert not is_degenerate(HashingEmbedder(384).embed(["hello world"])[0])


class _WrongSize(HashingEmbedder):
    def _encode(self, texts):
        return np.ones((len(texts), 12))


def test_dimension_check_refuses_other_sizes():
    with pytest.raises(EmbeddingDimensionError, match="12-dimensional"):
        _WrongSize(384).embed(["x"])


def test_a_wrong_dimension_writes_nothing(api, monkeypatch):
    monkeypatch.setattr("facts.writes.get_embedder", lambda: _WrongSize(384))
    response = api.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": "Anything at all."}, format="json"
    )
    assert response.status_code == 503
    assert error_code(response) == "embedder_unavailable"
    assert Fact.objects.count() == 0


def _fake_vector(index: int, dim: int) -> list[float]:
    return [float((j + index) % 5 + 1) for j in range(dim)]


class _FakeOpenAI(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings; in mode "slow" it answers only once the fixture ends (or 30 s on)."""

    mode = "ok"
    seen: list = []
    released = threading.Event()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _FakeOpenAI.seen.append((self.headers.get("Authorization"), body))
        if self.mode == "error":
            self.send_response(500)
            self.end_headers()
            return
        if self.mode == "slow":
            self.released.wait(30)
        dim = 384 if self.mode != "wrong_dim" else 100
        data = [{"index": i, "embedding": _fake_vector(i, dim)} for i, _ in enumerate(body["input"])]
        payload = json.dumps({"data": list(reversed(data)), "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_openai():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeOpenAI.seen, _FakeOpenAI.released = [], threading.Event()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/embeddings"
    _FakeOpenAI.released.set()
    server.shutdown()


def test_openai_embedder_against_a_fake_server(fake_openai):
    _FakeOpenAI.mode = "ok"
    embedder = OpenAICompatibleEmbedder(384, url=fake_openai, model="m1", api_key="sk-test", timeout=2)
    vectors = embedder.embed(["a", "b"])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    # the fake answers its data in reverse order: the embedder must put it back by `index`
    for i in (0, 1):
        expected = np.array(_fake_vector(i, 384)) / np.linalg.norm(_fake_vector(i, 384))
        assert np.allclose(vectors[i], expected, atol=1e-6)
    auth, body = _FakeOpenAI.seen[0]
    assert auth == "Bearer sk-test" and body == {"model": "m1", "input": ["a", "b"]}


@pytest.mark.parametrize(
    "mode, error",
    [("error", EmbedderUnavailable), ("wrong_dim", EmbeddingDimensionError), ("slow", EmbedderUnavailable)],
)
def test_openai_embedder_failures(fake_openai, mode, error):
    _FakeOpenAI.mode = mode
    embedder = OpenAICompatibleEmbedder(384, url=fake_openai, model="m1", api_key="", timeout=0.3)
    with pytest.raises(error):
        embedder.embed(["a"])


def test_openai_embedder_is_selected_by_settings(settings, fake_openai):
    _FakeOpenAI.mode = "ok"
    settings.HAKI_EMBED_PROVIDER = "openai"
    settings.HAKI_EMBED_URL = fake_openai
    settings.HAKI_EMBED_MODEL = "m2"
    assert get_embedder().name == "openai"
    assert get_embedder().embed(["x"]).shape == (1, 384)


@pytest.mark.minilm
def test_minilm_loads_offline_and_embeds_meaning(settings):
    settings.HAKI_EMBED_PROVIDER = "sentence-transformers"
    embedder = get_embedder()
    a, b, c = embedder.embed(["My sister lives in Lyon.", "Her sibling resides in Lyon.", "The invoice is overdue."])
    assert a.shape == (384,)
    assert abs(np.linalg.norm(a) - 1) < 1e-4
    assert float(a @ b) > float(a @ c) + 0.2


def _agreement_texts() -> list[str]:
    """A few hundred facts of the evaluation set in English and French, texts longer than MiniLM's 256 tokens
    (up to the documented 8,000 characters), and odd ones."""
    from pathlib import Path

    rows = [json.loads(line) for line in (Path(__file__).resolve().parents[2] / "eval" / "dataset.jsonl").open()]
    english = [f["text"] for r in rows if r["lang"] == "en" for f in r["facts"]][:200]
    french = [f["text"] for r in rows if r["lang"] == "fr" for f in r["facts"]][:100]
    long = [(" ".join(english[i:] + french[i:]))[:8000] for i in range(0, 100, 10)]
    odd = ["", "   ", "x", "Ça coûte 12,50 € — déjà payé ?", "東京に住んでいます", "a " * 300, "MAJUSCULES ÉTÉ"]
    return english + french + long + odd


@pytest.mark.minilm
def test_onnx_runtime_gives_the_vectors_of_sentence_transformers(settings, tmp_path):
    """The default runtime is an export of the same weights with the same tokens: stored vectors never need
    re-embedding when the runtime changes. The export lands in HAKI_MODEL_DIR and is reused."""
    from hakimem.embeddings import _build

    settings.HAKI_MODEL_DIR = str(tmp_path)
    texts = _agreement_texts()
    onnx = _build("sentence-transformers", 384, "", "", "", 10.0, "onnx")
    onnx._model = None  # a fresh load, exporting into tmp_path
    by_onnx = onnx.embed(texts)
    torch_embedder = _build("sentence-transformers", 384, "", "", "", 10.0, "torch")
    by_torch = torch_embedder.embed(texts)
    # the same tokens, truncated at the same max_seq_length and padded alike
    reference = torch_embedder._load().tokenize(texts)
    ours = onnx._load().tokenizer.encode_batch(texts)
    assert max(len(e.ids) for e in ours) == torch_embedder._load().max_seq_length == 256
    for name, field in (("input_ids", "ids"), ("attention_mask", "attention_mask"), ("token_type_ids", "type_ids")):
        assert np.array_equal(reference[name].numpy(), np.array([getattr(e, field) for e in ours])), name
    assert np.min(np.sum(by_onnx * by_torch, axis=1)) > 1 - 1e-6
    assert [p.suffix for p in tmp_path.iterdir()] == [".onnx"]


@pytest.mark.minilm
def test_the_onnx_runtime_loads_no_pytorch(settings):
    """A server worker embeds with onnxruntime and the `tokenizers` library alone: PyTorch and transformers
    would add ~370 MB to each worker's memory."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    get_embedder("sentence-transformers").embed(["the export exists before the child loads it"])
    # the child never connects: a database URL that names none keeps its settings off the test's embedded server
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "HAKI_MODEL_DIR": settings.HAKI_MODEL_DIR,
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
    }
    child = (
        "import django, sys; django.setup()\n"
        "from hakimem.embeddings import get_embedder\n"
        "assert get_embedder('sentence-transformers').embed(['warm up']).shape == (1, 384)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers', 'sentence_transformers'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", child],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.minilm
def test_int8_minilm_loads_offline_and_is_close_to_minilm(settings):
    """The int8 file is MiniLM with rounded weights: near, not equal, vectors (switching still re-embeds)."""
    texts = ["Ben is allergic to cats.", "Camille a déménagé à Nantes en mars 2024.", "x", "a " * 300]
    int8 = get_embedder("minilm-int8")
    assert (int8.name, int8.model) == ("minilm-int8", "all-MiniLM-L6-v2-int8")
    agreement = np.sum(int8.embed(texts) * get_embedder("sentence-transformers").embed(texts), axis=1)
    assert 0.99 < np.min(agreement) and np.max(agreement) < 0.99999


@pytest.mark.minilm
def test_multilingual_e5_embeds_questions_apart_and_across_languages(settings):
    """e5 is trained with "query: " before questions and "passage: " before stored texts: embed_query asks the
    former, embed the latter. A French question finds the English fact that answers it."""
    e5 = get_embedder("multilingual-e5-small")
    facts = e5.embed(["My sister lives in Lyon.", "Bob is a vegetarian.", "The invoice is overdue."])
    assert facts.shape == (3, 384) and abs(np.linalg.norm(facts[0]) - 1) < 1e-4
    question = e5.embed_query("Où habite ma sœur ?", project_id=PROJECT)
    assert float(question @ e5.embed(["Où habite ma sœur ?"])[0]) < 0.99  # not the passage vector
    assert float(question @ facts[0]) > max(float(question @ facts[1]), float(question @ facts[2])) + 0.05


def test_questions_go_through_the_providers_query_encoding(settings):
    """A provider that embeds questions apart (e5) gets every question the store is asked through that path."""
    asked = []

    class _Asymmetric(HashingEmbedder):
        def _encode_queries(self, texts):
            asked.extend(texts)
            return self._encode(texts)

    embedder = _Asymmetric(384)
    embedder.embed(["a stored fact"])
    embedder.embed_query("a question", project_id=PROJECT)
    assert asked == ["a question"]


@pytest.mark.django_db
def test_vector_literal_is_what_the_halfvec_column_stores():
    from django.db import connection

    from hakimem.embeddings import vector_literal

    vector = np.random.default_rng(3).normal(size=384).astype(np.float32) / 20
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::halfvec::text", [vector_literal(vector)])
        stored = np.array(cursor.fetchone()[0].strip("[]").split(","), dtype=np.float32)
    assert np.array_equal(stored, vector.astype(np.float16).astype(np.float32))
    for bad in (np.nan, np.inf, 1e6):
        with pytest.raises(ValueError):
            vector_literal(np.r_[vector[:-1], bad])


def test_an_unknown_runtime_is_refused(settings):
    settings.HAKI_EMBED_PROVIDER = "sentence-transformers"
    settings.HAKI_EMBED_RUNTIME = "tensorflow"
    with pytest.raises(EmbedderUnavailable, match="HAKI_EMBED_RUNTIME"):
        get_embedder()


# --- API keys and the error contract ------------------------------------------------------------------


def test_missing_key_is_401(client):
    response = client.get(f"/v1/facts?project_id={PROJECT}&subject_id=alice")
    assert response.status_code == 401
    assert error_code(response) == "unauthenticated"


@pytest.mark.parametrize("header", ["Bearer hk_wrong", "Token abc", "Bearer "])
def test_wrong_key_is_401(client, header):
    response = client.get(f"/v1/facts?project_id={PROJECT}&subject_id=alice", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert error_code(response) == "unauthenticated"


def test_revoked_key_is_401(api):
    assert api.get(f"/v1/facts?project_id={PROJECT}&subject_id=alice").status_code == 200
    api_key_revoke(key=ApiKey.objects.get(project_id=PROJECT))
    response = api.get(f"/v1/facts?project_id={PROJECT}&subject_id=alice")
    assert response.status_code == 401
    assert error_code(response) == "unauthenticated"


def test_keys_are_stored_hashed(api):
    key = ApiKey.objects.get(project_id=PROJECT)
    assert api.raw_key not in (key.key_hash, key.prefix)
    assert len(key.key_hash) == 64


def test_other_projects_scope_is_404_and_reveals_nothing(api, other_api):
    fact = api.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": "Alice owns a red bicycle."}, format="json"
    ).json()
    checks = [
        other_api.get(f"/v1/facts?project_id={PROJECT}&subject_id=alice"),
        other_api.get(f"/v1/facts/{fact['id']}"),
        other_api.patch(f"/v1/facts/{fact['id']}", {"importance": 0.9}, format="json"),
        other_api.delete(f"/v1/facts/{fact['id']}"),
        other_api.post("/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": "Injected."}, format="json"),
        other_api.post(
            "/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": "bicycle"}, format="json"
        ),
        other_api.delete(f"/v1/subjects/alice?project_id={PROJECT}"),
    ]
    for response in checks:
        assert response.status_code == 404, response.content
        assert error_code(response) == "not_found"
        assert "Alice" not in response.content.decode()
    assert Fact.objects.filter(project_id=PROJECT).count() == 1
    assert Fact.objects.get().status == "active"


def test_error_shape_for_unknown_route_bad_json_and_method(api):
    response = api.get("/v1/nothing-here")
    assert response.status_code == 404 and error_code(response) == "not_found"
    response = api.generic("POST", "/v1/facts", "{not json", content_type="application/json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    response = api.put("/v1/facts", {}, format="json")
    assert response.status_code == 405 and error_code(response) == "method_not_allowed"


def test_health_needs_no_key(client):
    body = client.get("/v1/health").json()
    assert body["status"] == "ok"
    assert body["vector_extension"].startswith("0.8")
    assert body["embedder"] == "hashing"


def test_create_api_key_command_prints_a_working_key(client):
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_key", "--project", "cmd-proj", "--label", "ci", stdout=out, stderr=err)
    raw = out.getvalue().strip()
    assert raw.startswith("hk_")
    response = client.get("/v1/facts?project_id=cmd-proj&subject_id=x", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 200


def test_create_api_key_refuses_a_bad_project_id():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("create_api_key", "--project", "bad project!", stdout=io.StringIO(), stderr=io.StringIO())
