"""Re-embedding every fact, event and procedure with one embedder (`manage.py reembed`), in batches, resumable.

Where the progress lives: a small table (facts_reembedrun, one row per run: the embedder's identity and a
cursor per table), not a marker column on facts and events. Facts, then events, then procedures are walked in id order (the
primary key's index); each batch's vectors and the run's cursor are written in one transaction, so after an
interruption the next run with the same embedder continues after the last committed batch, and once a run
has finished, running it again does nothing. A marker column would also catch rows written meanwhile with a
lower id, but it adds a column to the two largest tables and a write to every path that embeds; here the
rows written during a run are embedded by the server's own embedder, so switch the server to the new
provider first, then run reembed.

Embedding happens before each batch's transaction (it is the slow part). A row is updated only if its text is
still the one embedded: an edit made meanwhile keeps the vector its own write computed. Rows are updated in
place: the hnsw indexes take the new versions as inserts and autovacuum reclaims the old ones (a full run
leaves every row with a dead version, far above its threshold). The columns' dimension is fixed by the
migrations: an embedder of another dimension is refused before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction
from django.utils import timezone

from facts.models import Event, Fact, Procedure
from facts.procedures import procedure_embedding_text
from hakimem.embeddings import Embedder, EmbeddingDimensionError, vector_literal
from portability.models import ReembedRun

DEFAULT_BATCH_SIZE = 256
_LOCK_KEY = "hakimem.reembed"

# -- uses: the primary key of each table
_UPDATE_SQL = {
    Fact: "UPDATE facts_fact t SET embedding = v.embedding::halfvec"
    " FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS v(id, text, embedding)"
    " WHERE t.id = v.id AND t.text = v.text",
    Event: "UPDATE facts_event t SET embedding = v.embedding::halfvec"
    " FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS v(id, text, embedding)"
    " WHERE t.id = v.id AND t.text = v.text",
    # A procedure's vector is of its title and steps together (facts.procedures.procedure_embedding_text).
    Procedure: "UPDATE facts_procedure t SET embedding = v.embedding::halfvec"
    " FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS v(id, text, embedding)"
    " WHERE t.id = v.id AND t.title || E'\\n' || t.text = v.text",
}

# The tables in the order a run walks them, each with its cursor, its count and the flag that closes it (the last
# one closes the run).
_STAGES = (
    (Fact, "fact_cursor", "facts_embedded", "facts_done"),
    (Event, "event_cursor", "events_embedded", "events_done"),
    (Procedure, "procedure_cursor", "procedures_embedded", None),
)


def _rows_after(model, after):
    return model.objects.all() if after is None else model.objects.filter(id__gt=after)


def _texts(model, after, batch_size: int) -> list[tuple]:
    """(id, the text its vector is computed from) of the next batch."""
    rows = _rows_after(model, after).order_by("id")
    if model is Procedure:
        return [
            (i, procedure_embedding_text(title, text))
            for i, title, text in rows.values_list("id", "title", "text")[:batch_size]
        ]
    return list(rows.values_list("id", "text")[:batch_size])


class ReembedRefused(Exception):
    pass


def column_dimensions() -> dict[str, int]:
    """The declared size of each embedding column (halfvec(n): the type modifier is n)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, a.atttypmod FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
            " WHERE c.relname IN ('facts_fact', 'facts_event', 'facts_procedure') AND a.attname = 'embedding'"
        )
        return dict(cursor.fetchall())


def check_dimension(embedder: Embedder) -> None:
    """Refuse an embedder whose vectors the columns cannot hold, before anything is written."""
    try:
        made = embedder.embed(["dimension probe"]).shape[1]
    except EmbeddingDimensionError as exc:
        raise ReembedRefused(f"{exc}") from exc
    wrong = {table: dim for table, dim in column_dimensions().items() if dim != made}
    if wrong:
        held = ", ".join(f"{table}.embedding holds {dim}" for table, dim in sorted(wrong.items()))
        raise ReembedRefused(
            f"{embedder.name} ({embedder.model or 'default model'}) makes {made}-dimensional vectors, but {held}. "
            "Changing the dimension needs a migration of the columns and their hnsw indexes; reembed does not do that."
        )


@contextmanager
def single_run():
    """One reembed at a time: a session-level advisory lock, released however the run ends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [_LOCK_KEY])
        if not cursor.fetchone()[0]:
            raise ReembedRefused("another reembed is running")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [_LOCK_KEY])


def reembed_start(*, embedder: Embedder, restart: bool = False) -> tuple[ReembedRun, bool]:
    """The run to carry on: the latest one if it used this embedder (finished: nothing to do), else a new one.
    Returns (run, resumed)."""
    identity = embedder.identity()
    latest = ReembedRun.objects.order_by("-started_at", "-id").first()
    if (
        latest is not None
        and not restart
        and ({"provider": latest.provider, "model": latest.model, "dimension": latest.dimension} == identity)
    ):
        return latest, True
    run = ReembedRun.objects.create(
        provider=identity["provider"],
        model=identity["model"],
        dimension=identity["dimension"],
        started_at=timezone.now(),
    )
    return run, False


def _open_stages(run: ReembedRun) -> list[tuple]:
    """The stages a run has not closed yet, the current one first."""
    if run.finished_at is not None:
        return []
    return [stage for stage in _STAGES if stage[3] is None or not getattr(run, stage[3])]


def reembed_remaining(run: ReembedRun) -> int:
    return sum(_rows_after(model, getattr(run, cursor)).count() for model, cursor, _, _ in _open_stages(run))


def reembed_batches(*, run: ReembedRun, embedder: Embedder, batch_size: int = DEFAULT_BATCH_SIZE) -> Iterator[int]:
    """Re-embed the run's remaining rows batch by batch, yielding each batch's size; the run is finished when
    the iterator is exhausted."""
    while run.finished_at is None:
        model, cursor_field, count_field, done_field = _open_stages(run)[0]
        rows = _texts(model, getattr(run, cursor_field), batch_size)
        if not rows:
            if done_field is None:
                run.finished_at = timezone.now()
            else:
                setattr(run, done_field, True)
            run.save(update_fields=[done_field or "finished_at"])
            continue
        vectors = embedder.embed([text for _, text in rows])
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(
                    _UPDATE_SQL[model],
                    [
                        [row_id for row_id, _ in rows],
                        [text for _, text in rows],
                        [vector_literal(v) for v in vectors],
                    ],
                )
            setattr(run, cursor_field, rows[-1][0])
            setattr(run, count_field, getattr(run, count_field) + len(rows))
            run.save(update_fields=[cursor_field, count_field])
        yield len(rows)
