"""The memory store: facts, events (episodes) and conflict sets.

Invariants the database holds itself (so no code path, admin or SQL console can break them): status values,
text length, importance in [0, 1], valid_from <= valid_to, metadata is a JSON object, a superseded fact
points to its successor, and at most one *active* fact per scope carries a given normalised text (the
de-duplication guarantee under concurrent writers).
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorCombinable, SearchVectorField
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Length
from django.db.models.lookups import Exact, GreaterThanOrEqual, LessThanOrEqual
from pgvector.django import HalfVectorField, HnswIndex

from hakimem.validators import SCOPE_ID_MAX, validate_scope_id

EMBED_DIM = 384  # the vector columns' size; HAKI_EMBED_DIM must equal it (checked on every embedding)
# Embeddings are stored as halfvec (16-bit floats): half the heap and half the hnsw index of vector(384), and
# faster scans; unit vectors lose about 1e-3 of cosine precision, far below any ranking difference.
FACT_TEXT_MAX = 8000
EVENT_TEXT_MAX = 8000
CATEGORY_MAX = 64
SIGNAL_DETAIL_MAX = 500
RESOLVED_BY_MAX = 200
CONFLICT_NOTE_MAX = 2000  # a curator's note on a resolution, capped where it is typed (API and admin form)
# Build parameters of every hnsw graph on the vector columns, the shared ones below and each scope's own
# (facts.scope_graphs): pgvector's defaults.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


class FactStatus(models.TextChoices):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"


class FactKind(models.TextChoices):
    FACT = "fact"
    PREFERENCE = "preference"


class Volatility(models.TextChoices):
    PERMANENT = "permanent"  # never expires: nothing a client wrote disappears silently
    STABLE = "stable"  # expires HAKI_VOLATILITY_TTL_DAYS["stable"] days after it was last confirmed
    VOLATILE = "volatile"


class ConflictStatus(models.TextChoices):
    OPEN = "open"
    RESOLVED = "resolved"
    DISMISSED = "dismissed"


def _text_length_check(name: str, limit: int) -> models.CheckConstraint:
    length = Length("text")
    return models.CheckConstraint(
        name=name, condition=Q(GreaterThanOrEqual(length, 1)) & Q(LessThanOrEqual(length, limit))
    )


def _metadata_object_check(name: str) -> models.CheckConstraint:
    kind = models.Func(F("metadata"), function="jsonb_typeof", output_field=models.CharField())
    return models.CheckConstraint(name=name, condition=Q(Exact(kind, "object")))


class ScopeLexeme(SearchVectorCombinable, models.Func):
    """A one-lexeme tsvector naming the row's scope: hakimem_scope_lexeme(project_id, subject_id) (SQL, migration
    facts/0015), 'scope ' and a digest of the two ids. The parser never makes a lexeme with a space, so no text holds
    it. It is in the search_vector of every fact and event, so that the GIN index alone finds a scope's matches: a
    lexical leg asks for its words AND this lexeme (context.retrieval.scoped_match), and GIN intersects the words'
    posting lists with the scope's rather than ANDing the table-wide matches with a bitmap of every row of the
    scope. Ranks ignore it: no query word is it."""

    function = "array_to_tsvector"
    template = "%(function)s(ARRAY[hakimem_scope_lexeme(%(expressions)s)])"
    output_field = SearchVectorField()

    def __init__(self):
        super().__init__(F("project_id"), F("subject_id"))


def _search_vector(field: str):
    # 'simple' config: no stemming, no stop words, the same for English and French text. Built once at
    # write time (a stored generated column), never re-parsed per query.
    return SearchVector(field, config="simple") + ScopeLexeme()


class ExtractionStatus(models.TextChoices):
    PENDING = "pending"  # queued: a worker will ask the extractor
    DONE = "done"  # the extractor answered; its valid facts went through the write path
    FAILED = "failed"  # timeout, invalid answer, transport errors past the retries: extraction_error says which
    SKIPPED = "skipped"  # nothing may be extracted: extraction was switched off, or the subject consents to nothing


EXTRACTION_ERROR_MAX = 64


class ConflictPolicy(models.TextChoices):
    CURATOR = "curator"  # open a conflict set; a curator resolves it
    NEWEST_WINS = "newest_wins"  # the newer fact supersedes the older at once


class ConsentWritePolicy(models.TextChoices):
    REFUSE = "refuse"  # a write of a category the subject has not consented to answers 403 consent_missing
    STORE = "store"  # it is stored, and never served until consent is given


class Project(models.Model):
    """A project's own settings. A project without a row behaves by the environment's defaults
    (HAKI_CONFLICT_POLICY, no consent required, any category): nothing changes for projects that never set one."""

    project_id = models.CharField(primary_key=True, max_length=SCOPE_ID_MAX, validators=[validate_scope_id])
    consent_required = models.BooleanField(
        default=False, help_text="Serve a fact only while its subject consents to the fact's category."
    )
    consent_write_policy = models.CharField(
        max_length=16, choices=ConsentWritePolicy.choices, default=ConsentWritePolicy.REFUSE
    )
    categories = models.JSONField(
        default=list, blank=True, help_text="The project's fact categories; empty: any category is accepted."
    )
    conflict_policy = models.CharField(
        max_length=16, choices=ConflictPolicy.choices, blank=True, default="", help_text="Empty: HAKI_CONFLICT_POLICY."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                name="project_write_policy_valid", condition=Q(consent_write_policy__in=ConsentWritePolicy.values)
            ),
            models.CheckConstraint(
                name="project_conflict_policy_valid", condition=Q(conflict_policy__in=["", *ConflictPolicy.values])
            ),
        ]

    def __str__(self) -> str:
        return self.project_id


class ScopedModel(models.Model):
    project_id = models.CharField(max_length=SCOPE_ID_MAX, validators=[validate_scope_id])
    subject_id = models.CharField(max_length=SCOPE_ID_MAX, validators=[validate_scope_id])

    class Meta:
        abstract = True


class Event(ScopedModel):
    """An episode: something that happened to or around the subject, at a date."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    text = models.TextField()
    occurred_at = models.DateTimeField()
    embedding = HalfVectorField(dimensions=EMBED_DIM)
    search_vector = models.GeneratedField(
        expression=_search_vector("text"), output_field=SearchVectorField(), db_persist=True
    )
    metadata = models.JSONField(default=dict, blank=True)
    recorded_at = models.DateTimeField(auto_now_add=True)
    # Fact extraction (ingest.extraction), when HAKI_EXTRACTOR_URL was set as the event was written; "" otherwise.
    # Database defaults: the bulk loaders (COPY) name only the event's own columns.
    extraction_status = models.CharField(
        max_length=16, choices=ExtractionStatus.choices, blank=True, default="", db_default=""
    )
    extraction_attempts = models.PositiveSmallIntegerField(
        default=0, db_default=0, help_text="Calls made to the extractor."
    )
    extraction_error = models.CharField(max_length=EXTRACTION_ERROR_MAX, blank=True, default="", db_default="")
    extraction_fact_ids = models.JSONField(
        default=list,
        blank=True,
        db_default=models.Value([], models.JSONField()),
        help_text="The facts the extraction wrote or re-confirmed.",
    )

    class Meta:
        indexes = [
            HnswIndex(
                name="facts_event_embedding_hnsw",
                fields=["embedding"],
                opclasses=["halfvec_cosine_ops"],
                m=HNSW_M,
                ef_construction=HNSW_EF_CONSTRUCTION,
            ),
            GinIndex(name="facts_event_search_gin", fields=["search_vector"]),
            models.Index(name="facts_event_scope_time", fields=["project_id", "subject_id", "-occurred_at", "-id"]),
            # The exact dense leg of small scopes reads a scope's vectors from here, index-only, as it does for
            # facts (facts_fact_scope_vectors): episodes go through the same two-phase path.
            models.Index(
                name="facts_event_scope_vectors", fields=["project_id", "subject_id"], include=["id", "embedding"]
            ),
        ]
        constraints = [
            _text_length_check("event_text_length", EVENT_TEXT_MAX),
            _metadata_object_check("event_metadata_object"),
            models.CheckConstraint(
                name="event_extraction_status_valid", condition=Q(extraction_status__in=["", *ExtractionStatus.values])
            ),
        ]

    def __str__(self) -> str:
        return f"{self.occurred_at:%Y-%m-%d} {self.text[:60]}"


class Fact(ScopedModel):
    """A durable statement about the subject, with business validity (valid_from/valid_to) and
    transaction time (recorded_from/recorded_to)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    text = models.TextField()
    text_hash = models.CharField(max_length=64, help_text="sha256 of the normalised text, for de-duplication")
    embedding = HalfVectorField(dimensions=EMBED_DIM)
    search_vector = models.GeneratedField(
        expression=_search_vector("text"), output_field=SearchVectorField(), db_persist=True
    )
    status = models.CharField(max_length=16, choices=FactStatus.choices, default=FactStatus.ACTIVE)
    category = models.CharField(max_length=CATEGORY_MAX, blank=True, default="")
    kind = models.CharField(max_length=16, choices=FactKind.choices, default=FactKind.FACT)
    importance = models.FloatField(default=0.5)
    volatility = models.CharField(max_length=16, choices=Volatility.choices, default=Volatility.PERMANENT)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    recorded_from = models.DateTimeField()
    recorded_to = models.DateTimeField(null=True, blank=True)
    last_confirmed_at = models.DateTimeField(help_text="Volatility TTLs count from here; a repeat write moves it.")
    # No database constraint from Django on these two: the database's keys are (id, project_id) (docs/scaling.md),
    # and the constraints are composite, (x_id, project_id) -> (id, project_id), written by
    # facts/migrations/0012_project_in_keys: a fact can only point at a row of its own project.
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="supersedes",
        db_constraint=False,
    )
    source_event = models.ForeignKey(
        Event, null=True, blank=True, on_delete=models.SET_NULL, related_name="facts", db_constraint=False
    )
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            # Partial: the assembler only ever reads active facts, so the graph holds only them and the
            # scope filter applied after the hnsw scan discards fewer rows.
            HnswIndex(
                name="facts_fact_embedding_hnsw",
                fields=["embedding"],
                opclasses=["halfvec_cosine_ops"],
                m=HNSW_M,
                ef_construction=HNSW_EF_CONSTRUCTION,
                condition=Q(status="active"),
            ),
            GinIndex(name="facts_fact_search_gin", fields=["search_vector"], condition=Q(status="active")),
            models.Index(name="facts_fact_scope_status", fields=["project_id", "subject_id", "status"]),
            models.Index(
                name="facts_fact_scope_recorded", fields=["project_id", "subject_id", "-recorded_from", "-id"]
            ),
            # The exact dense leg (context.retrieval.HYBRID_EXACT_CANDIDATES_SQL) reads a scope's vectors from
            # here, index-only: a scope's facts are scattered one per heap page, while a leaf page of this
            # index holds ten of them.
            models.Index(
                name="facts_fact_scope_vectors",
                fields=["project_id", "subject_id"],
                include=["id", "valid_to", "embedding"],
                condition=Q(status="active"),
            ),
        ]
        constraints = [
            models.CheckConstraint(name="fact_status_valid", condition=Q(status__in=FactStatus.values)),
            models.CheckConstraint(name="fact_kind_valid", condition=Q(kind__in=FactKind.values)),
            models.CheckConstraint(name="fact_volatility_valid", condition=Q(volatility__in=Volatility.values)),
            _text_length_check("fact_text_length", FACT_TEXT_MAX),
            _metadata_object_check("fact_metadata_object"),
            models.CheckConstraint(name="fact_importance_range", condition=Q(importance__gte=0) & Q(importance__lte=1)),
            models.CheckConstraint(
                name="fact_validity_ordered",
                condition=Q(valid_from__isnull=True) | Q(valid_to__isnull=True) | Q(valid_from__lte=F("valid_to")),
            ),
            models.CheckConstraint(
                name="fact_superseded_has_successor",
                condition=~Q(status="superseded") | Q(superseded_by__isnull=False),
            ),
            models.CheckConstraint(
                name="fact_current_iff_not_closed",
                condition=(Q(status="active") & Q(recorded_to__isnull=True))
                | (~Q(status="active") & Q(recorded_to__isnull=False)),
            ),
            models.UniqueConstraint(
                name="fact_active_text_unique_in_scope",
                fields=["project_id", "subject_id", "text_hash"],
                condition=Q(status="active"),
            ),
        ]

    def __str__(self) -> str:
        return self.text[:80]


class ConflictSet(ScopedModel):
    """Facts that seem to contradict each other. While the set is open, none of its members is served."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    status = models.CharField(max_length=16, choices=ConflictStatus.choices, default=ConflictStatus.OPEN)
    signal = models.CharField(max_length=32, help_text="The contradiction rule that opened the set.")
    signal_detail = models.CharField(max_length=SIGNAL_DETAIL_MAX, blank=True, default="")
    # What the claims rules read as contradicting (facts.claims): {"attribute", "holder", "values": [newer, older]};
    # empty for a set a word rule opened.
    reading = models.JSONField(default=dict, blank=True)
    similarity = models.FloatField(help_text="Cosine similarity of the pair that opened the set.")
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=RESOLVED_BY_MAX, blank=True, default="")
    note = models.TextField(blank=True, default="")
    facts = models.ManyToManyField(Fact, through="ConflictMember", related_name="conflict_sets")

    class Meta:
        indexes = [models.Index(name="facts_conflict_scope_status", fields=["project_id", "subject_id", "status"])]
        constraints = [
            models.CheckConstraint(name="conflict_status_valid", condition=Q(status__in=ConflictStatus.values)),
            models.CheckConstraint(
                name="conflict_closed_has_time",
                condition=Q(status="open", resolved_at__isnull=True)
                | (~Q(status="open") & Q(resolved_at__isnull=False)),
            ),
        ]

    def __str__(self) -> str:
        return f"conflict {str(self.id)[:8]} ({self.status}, {self.signal})"


class ConflictMember(models.Model):
    # Its set's project, written with the row: the distribution column every scoped table holds (docs/scaling.md),
    # which the composite foreign keys to the set and the fact include, and row security filters on.
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    # Composite constraints in the database, as on Fact (facts/migrations/0012_project_in_keys).
    conflict_set = models.ForeignKey(ConflictSet, on_delete=models.CASCADE, related_name="members", db_constraint=False)
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="conflict_memberships", db_constraint=False)
    added_at = models.DateTimeField()
    kept = models.BooleanField(null=True, blank=True, help_text="Set when the set is resolved.")

    class Meta:
        constraints = [
            models.UniqueConstraint(name="conflict_member_unique", fields=["conflict_set", "fact", "project_id"])
        ]
        indexes = [models.Index(name="facts_conflictmember_fact", fields=["fact"])]


class Consent(ScopedModel):
    """A subject's consent to one category of facts. Never deleted by a revocation: the row gets revoked_at,
    and a new grant is a new row, so the history of grants and revocations stays (erasure of the subject
    deletes it with everything else)."""

    category = models.CharField(max_length=CATEGORY_MAX)
    granted_at = models.DateTimeField()
    granted_by = models.CharField(max_length=RESOLVED_BY_MAX)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=RESOLVED_BY_MAX, blank=True, default="")

    class Meta:
        indexes = [models.Index(name="facts_consent_scope", fields=["project_id", "subject_id", "category"])]
        constraints = [
            # At most one current consent per category, even under concurrent grants.
            models.UniqueConstraint(
                name="consent_one_active_per_category",
                fields=["project_id", "subject_id", "category"],
                condition=Q(revoked_at__isnull=True),
            ),
            models.CheckConstraint(
                name="consent_revoked_after_granted",
                condition=Q(revoked_at__isnull=True) | Q(revoked_at__gte=F("granted_at")),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.category} ({'revoked' if self.revoked_at else 'granted'})"


PROJECT_WIDE = ""  # the subject_id of an identity block or a procedure that applies to every subject of its project
IDENTITY_NAME_MAX = 100
IDENTITY_TEXT_MAX = 4000
IDENTITY_BLOCKS_PER_SCOPE = 50  # always-on texts share one small tier budget: more than this is a mistake
PROCEDURE_TITLE_MAX = 200
PROCEDURE_TEXT_MAX = 8000


def validate_scope_id_or_project_wide(value: str) -> None:
    if value != PROJECT_WIDE:
        validate_scope_id(value)


class IdentityBlock(models.Model):
    """A short always-on text (a persona, a standing instruction) for a project (subject_id '') or one subject.
    Served first, in `position` order, never ranked: nothing to embed or index for search. A DELETE removes the
    row (`enabled` is the switch that keeps it); the traces' decisions that served it keep its id."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project_id = models.CharField(max_length=SCOPE_ID_MAX, validators=[validate_scope_id])
    subject_id = models.CharField(
        max_length=SCOPE_ID_MAX,
        blank=True,
        default=PROJECT_WIDE,
        validators=[validate_scope_id_or_project_wide],
        help_text="Empty: every subject of the project.",
    )
    name = models.CharField(max_length=IDENTITY_NAME_MAX)
    text = models.TextField()
    position = models.PositiveIntegerField(default=0, help_text="Blocks are served by position, then name.")
    enabled = models.BooleanField(default=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # Its index also serves every read: a scope's blocks, by (project_id, subject_id).
            models.UniqueConstraint(
                name="identity_block_name_unique_in_scope", fields=["project_id", "subject_id", "name"]
            ),
            _text_length_check("identity_block_text_length", IDENTITY_TEXT_MAX),
            models.CheckConstraint(
                name="identity_block_name_not_empty", condition=Q(GreaterThanOrEqual(Length("name"), 1))
            ),
            _metadata_object_check("identity_block_metadata_object"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.subject_id or 'project-wide'})"


class ProcedureStatus(models.TextChoices):
    ACTIVE = "active"
    RETRACTED = "retracted"  # by DELETE /v1/procedures/{id}: never served again, kept for the traces naming it


class Procedure(models.Model):
    """A workflow ("how we deploy", "how the user likes reports written") for a project (subject_id '') or one
    subject: the third memory layer, embedded and full-text indexed like facts and retrieved by the same
    two-phase path (context.retrieval.procedure_candidates)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project_id = models.CharField(max_length=SCOPE_ID_MAX, validators=[validate_scope_id])
    subject_id = models.CharField(
        max_length=SCOPE_ID_MAX,
        blank=True,
        default=PROJECT_WIDE,
        validators=[validate_scope_id_or_project_wide],
        help_text="Empty: every subject of the project.",
    )
    title = models.CharField(max_length=PROCEDURE_TITLE_MAX)
    text = models.TextField(help_text="The steps.")
    category = models.CharField(max_length=CATEGORY_MAX, blank=True, default="")
    importance = models.FloatField(default=0.5)
    embedding = HalfVectorField(dimensions=EMBED_DIM)
    search_vector = models.GeneratedField(
        expression=SearchVector("title", "text", config="simple"), output_field=SearchVectorField(), db_persist=True
    )
    status = models.CharField(max_length=16, choices=ProcedureStatus.choices, default=ProcedureStatus.ACTIVE)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # Partial on active, as for facts: retrieval reads active procedures only.
            HnswIndex(
                name="facts_procedure_embedding_hnsw",
                fields=["embedding"],
                opclasses=["halfvec_cosine_ops"],
                m=HNSW_M,
                ef_construction=HNSW_EF_CONSTRUCTION,
                condition=Q(status="active"),
            ),
            GinIndex(name="facts_procedure_search_gin", fields=["search_vector"], condition=Q(status="active")),
            # The exact dense leg reads a scope's vectors from here, index-only, as for facts and events
            # (context.retrieval: a subject's procedures and the project-wide ones, two ranges of it).
            models.Index(
                name="facts_procedure_scope_vectors",
                fields=["project_id", "subject_id"],
                include=["id", "embedding"],
                condition=Q(status="active"),
            ),
            # The list (GET /v1/procedures), newest first, one keyset page at a time.
            models.Index(
                name="facts_procedure_scope_created", fields=["project_id", "subject_id", "-created_at", "-id"]
            ),
        ]
        constraints = [
            models.CheckConstraint(name="procedure_status_valid", condition=Q(status__in=ProcedureStatus.values)),
            _text_length_check("procedure_text_length", PROCEDURE_TEXT_MAX),
            models.CheckConstraint(
                name="procedure_title_length",
                condition=Q(GreaterThanOrEqual(Length("title"), 1))
                & Q(LessThanOrEqual(Length("title"), PROCEDURE_TITLE_MAX)),
            ),
            models.CheckConstraint(
                name="procedure_importance_range", condition=Q(importance__gte=0) & Q(importance__lte=1)
            ),
            _metadata_object_check("procedure_metadata_object"),
        ]

    def __str__(self) -> str:
        return self.title[:80]


class ScopeWrite(models.Model):
    """The last transaction that changed what a context call of a scope reads: its facts, events, conflict sets,
    consents, identity blocks or procedures (subject_id "" for the project's own settings and its project-wide
    blocks and procedures). Written by triggers on those tables (facts/migrations/0011_scope_writes.py), so every writer is covered: the API, the admin, the extraction
    worker, erasure. A read replica serves a scope's context call only when it holds the same rows as the
    primary here (hakimem/db_router.py, docs/scaling.md): the call then sees every write committed before it.
    Erasure deletes the scope's row, which names the subject."""

    pk = models.CompositePrimaryKey("project_id", "subject_id")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    subject_id = models.CharField(max_length=SCOPE_ID_MAX, blank=True)
    # pg_current_xact_id() of the writing transaction: unique per transaction, so comparing for equality tells
    # whether a replica has replayed this very commit (a counter would restart after an erasure deleted the row).
    written_by = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.project_id}/{self.subject_id or '*'}"


class ScopeWordCounts(models.Model):
    """A large scope's own word counts: how many of its items hold each of its commoner words (ScopeWord), counted
    by the nightly consolidation (facts.scope_words.scope_words_refresh) for the facts, and apart for the events, of
    every scope of HAKI_SCOPE_WORDS_MIN_ITEMS items or more. The context call reads the counts of its query's words
    (context/retrieval.py): the planner's statistics give a word's share of the whole table, and a scope's own cast
    is rare in the table and common in the scope (a 10k scope's protagonist: 0.5 % of a 1M table, 46 % of the
    scope). The words are the subject's: erasure deletes them with the scope."""

    pk = models.CompositePrimaryKey("project_id", "subject_id", "items_table")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    subject_id = models.CharField(max_length=SCOPE_ID_MAX)
    items_table = models.CharField(max_length=32)  # facts_fact or facts_event: the table whose words are counted
    items = models.IntegerField()  # the scope's items when counted (active facts; events)
    unlisted_max = models.IntegerField()  # a word without a ScopeWord row is held by at most this many items
    counted_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(items__gte=0) & Q(unlisted_max__gte=0), name="scope_word_counts_sizes"),
            models.CheckConstraint(
                condition=Q(items_table__in=["facts_fact", "facts_event"]), name="scope_word_counts_table"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.subject_id} ({self.items_table})"


class ScopeWord(models.Model):
    """One word of a counted scope (ScopeWordCounts) and how many of its items hold it."""

    pk = models.CompositePrimaryKey("project_id", "subject_id", "items_table", "word")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    subject_id = models.CharField(max_length=SCOPE_ID_MAX)
    items_table = models.CharField(max_length=32)
    word = models.TextField()  # a lexeme of the items' search_vector ('simple' configuration)
    items = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.project_id}/{self.subject_id} ({self.items_table}): {self.word} {self.items}"
