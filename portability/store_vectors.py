"""Whether the stored vectors were made by the configured embedder. A server switched to another embedder (a new
HAKI_EMBED_PROVIDER, or an upgrade whose default changed) without `manage.py reembed` compares every question with
vectors of another model: its distances mean nothing, yet every call would still answer. A system check asks this
at `manage.py migrate`, which `make run` and a deployment run before the server starts.

The answer, from what the store says of itself:
- "reembedding": an unfinished reembed run writes with the configured embedder (the store is mixed on purpose
  until it ends); an unfinished run of another embedder leaves a mixed store no embedder can serve: "mismatch";
- "ok" or "mismatch": the latest finished run's embedder is or is not the configured one; with no run at all, one
  stored fact (else one event) is embedded again and compared with its stored vector;
- "empty": nothing stored yet, anything may write.
"""

from __future__ import annotations

import numpy as np
from django.core import checks
from django.db import ProgrammingError, connection

from hakimem.embeddings import Embedder, EmbedderUnavailable, get_embedder
from portability.models import ReembedRun

OK, REEMBEDDING, EMPTY, MISMATCH = "ok", "reembedding", "empty", "mismatch"
# Stored as halfvec: a vector read back is within ~1e-3 of the one written; another model's is far below this.
SAME_VECTOR_COSINE = 0.99

_SAMPLE_SQL = {
    "facts_fact": "SELECT text, embedding::text FROM facts_fact LIMIT 1",
    "facts_event": "SELECT text, embedding::text FROM facts_event LIMIT 1",
}


def _identity(run: ReembedRun) -> dict:
    return {"provider": run.provider, "model": run.model, "dimension": run.dimension}


def _sample() -> tuple[str, np.ndarray] | None:
    """One stored text and its vector: a fact, else an event; None when the store holds neither."""
    with connection.cursor() as cursor:
        for sql in _SAMPLE_SQL.values():
            cursor.execute(sql)
            row = cursor.fetchone()
            if row is not None:
                return row[0], np.asarray(row[1].strip("[]").split(","), dtype=np.float32)
    return None


def store_vectors(embedder: Embedder) -> str:
    """OK, REEMBEDDING, EMPTY or MISMATCH for `embedder` (module docstring). Reads the database, and may embed one
    text; the embedder's failure propagates (readiness reports the embedder as unavailable first)."""
    identity = embedder.identity()
    latest = ReembedRun.objects.order_by("-started_at", "-id").first()
    if latest is not None and latest.finished_at is None:  # the store is mixed until the run ends
        return REEMBEDDING if _identity(latest) == identity else MISMATCH
    finished = ReembedRun.objects.filter(finished_at__isnull=False).order_by("-finished_at", "-id").first()
    if finished is not None:
        return OK if _identity(finished) == identity else MISMATCH
    sample = _sample()
    if sample is None:
        return EMPTY
    text, stored = sample
    made = embedder.embed([text])[0]
    cosine = float(np.dot(made, stored) / (np.linalg.norm(made) * np.linalg.norm(stored) or 1.0))
    return OK if cosine >= SAME_VECTOR_COSINE else MISMATCH


@checks.register(checks.Tags.database)
def check_stored_vectors(app_configs=None, databases=None, **kwargs) -> list[checks.CheckMessage]:
    """The system check `manage.py migrate` (so `make run`) and `manage.py check --database default` run: an error
    when the configured embedder did not make the stored vectors. Only the owner's connection can tell: the web
    server's login role sees no project's rows outside a request (hakimem.rowsecurity)."""
    if not databases or "default" not in databases:
        return []
    try:
        verdict = store_vectors(get_embedder())
    except ProgrammingError:  # an unmigrated database: nothing stored yet
        return []
    except EmbedderUnavailable as exc:
        return [checks.Warning(f"the stored vectors were not checked: {exc}", id="portability.W001")]
    if verdict != MISMATCH:
        return []
    embedder = get_embedder()
    return [
        checks.Error(
            f"the stored vectors were not made by the configured embedder, {embedder.name} "
            f"({embedder.model or 'default model'}): every context call would rank by meaningless distances",
            hint="run `manage.py reembed` with this embedder (the server may start once it is under way), or set "
            "HAKI_EMBED_PROVIDER back to the embedder that made them; `migrate --skip-checks` migrates regardless",
            id="portability.E001",
        )
    ]
