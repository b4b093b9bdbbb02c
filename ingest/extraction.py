"""Fact extraction from events: an OpenAI-compatible chat model reads an event and proposes facts, which go
through the normal write path (facts.writes.fact_create_batch: de-duplication, conflicts, consent).

Off unless HAKI_EXTRACTOR_URL is set. The event's write only queues the work (ingest.tasks, on procrastinate,
in the event's own transaction: ingest.services.event_ingest); a worker calls `event_extract`. Nothing here may fail an event's write.

The model's answer is untrusted input, guarded at this boundary:
- the answer must be JSON: a list of items, or an object whose "facts" is that list; anything else fails the
  extraction (`invalid_output`), never retried (the same prompt would get the same kind of answer);
- each item is checked alone against a strict schema, {text, category, confidence} and nothing else: text
  1-8,000 characters, category one of the project's list when it has one (consented to, when the project
  requires consent), confidence a number in [0, 1]. An invalid item is dropped with a warning, the rest stay;
- an item under MIN_CONFIDENCE is dropped;
- an item whose text (COPY_MIN_CHARS or more) appears verbatim in the event is dropped: copied, not extracted;
- each attempt has its own timeout (HAKI_EXTRACTOR_TIMEOUT); a transport error (connection refused or cut,
  HTTP 429 or 5xx) is retried once at once, a timeout never (a slow model stays slow and the queue would pile
  up behind it). Transport errors past that retry are left to the queue (ingest.tasks).

Logs name events by id and items by position, never their text: events and facts are personal data.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
from dataclasses import dataclass, field

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import F

from facts import selectors
from facts.errors import ServiceValidationError
from facts.models import (
    CATEGORY_MAX,
    EXTRACTION_ERROR_MAX,
    FACT_TEXT_MAX,
    ConsentWritePolicy,
    Event,
    ExtractionStatus,
)
from facts.writes import FactInput, fact_create_batch

logger = logging.getLogger("hakimem.extraction")

MIN_CONFIDENCE = 0.6
COPY_MIN_CHARS = 50
MAX_ANSWER_BYTES = 1024 * 1024  # an answer larger than this is not a list of facts about one event
CALLS_PER_ATTEMPT = 2  # the call and its one retry on a transport error
ACTOR = "extractor"
ITEM_KEYS = frozenset({"text", "category", "confidence"})

PROMPT = (
    "You extract durable facts about the user from one event of their life or conversation. "
    'Answer with JSON only: a list of objects {"text": a short fact in your own words, in the third person, '
    '"category": one of the allowed categories (or "" when none is given), "confidence": a number from 0 '
    "to 1}. Do not copy sentences of the event. Answer [] when there is nothing durable to remember."
)


class ExtractorError(Exception):
    code = "extractor_error"


class ExtractorTimeout(ExtractorError):
    code = "timeout"


class ExtractorTransportError(ExtractorError):
    code = "transport_error"


class ExtractorHttpError(ExtractorError):
    code = "http_error"


class ExtractorInvalidOutput(ExtractorError):
    code = "invalid_output"


def enabled() -> bool:
    return bool(settings.HAKI_EXTRACTOR_URL)


@dataclass
class ModelAnswer:
    items: list  # the raw items, not yet checked
    calls: int


@functools.cache
def _http() -> httpx.Client:
    """One client per process, shared by the worker's threads (httpx.Client is thread-safe): building one costs
    ~45 ms (its TLS context), more than a loopback call. trust_env off: no proxy or netrc from the environment."""
    return httpx.Client(trust_env=False)


def call_extractor(event_text: str, categories: tuple[str, ...], *, calls_done: list[int] | None = None) -> ModelAnswer:
    """Ask the model; returns its raw items. Raises ExtractorTimeout, ExtractorTransportError (after the one
    retry), ExtractorHttpError (another non-2xx) or ExtractorInvalidOutput. `calls_done`, when given, gets the
    number of calls made, also when an error is raised."""
    calls = calls_done if calls_done is not None else [0]
    user = (f"Allowed categories: {', '.join(categories)}\n" if categories else "") + f"Event:\n{event_text}"
    body = {
        "model": settings.HAKI_EXTRACTOR_MODEL,
        "messages": [{"role": "system", "content": PROMPT}, {"role": "user", "content": user}],
        "temperature": 0,
    }
    headers = {"Authorization": f"Bearer {settings.HAKI_EXTRACTOR_API_KEY}"} if settings.HAKI_EXTRACTOR_API_KEY else {}
    timeout = settings.HAKI_EXTRACTOR_TIMEOUT
    for attempt in range(CALLS_PER_ATTEMPT):
        calls[0] += 1
        try:
            status, content = _post(body, headers, timeout)
        except httpx.TimeoutException as exc:
            raise ExtractorTimeout(f"no answer within {timeout:g} s") from exc
        except httpx.TransportError as exc:
            error = ExtractorTransportError(f"transport: {exc.__class__.__name__}")
        else:
            if status == 429 or status >= 500:
                error = ExtractorTransportError(f"HTTP {status}")
            elif status >= 300:
                raise ExtractorHttpError(f"HTTP {status}")
            else:
                return ModelAnswer(items=_items_of(content), calls=calls[0])
        if attempt + 1 < CALLS_PER_ATTEMPT:
            logger.warning("extractor: %s, retrying once", error)
    raise error


def _post(body: dict, headers: dict, timeout: float) -> tuple[int, bytes]:
    """One call: (status, body). The timeout bounds each network wait, and the whole answer must have arrived
    within it too: a server trickling bytes does not hold the worker longer than one more wait."""
    deadline = time.monotonic() + timeout
    with _http().stream(
        "POST", settings.HAKI_EXTRACTOR_URL, json=body, headers=headers, timeout=httpx.Timeout(timeout)
    ) as response:
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("the answer took longer than the timeout")
            if size > MAX_ANSWER_BYTES:
                raise ExtractorInvalidOutput(f"the answer is over {MAX_ANSWER_BYTES} bytes")
        return response.status_code, b"".join(chunks)


def _items_of(raw: bytes) -> list:
    try:
        content = json.loads(raw)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ExtractorInvalidOutput("not a chat completion") from exc
    if not isinstance(content, str):
        raise ExtractorInvalidOutput("the message has no text content")
    text = content.strip()
    if text.startswith("```"):  # a fenced block: models add one even when told not to
        text = text.strip("`").removeprefix("json").strip()
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise ExtractorInvalidOutput("the content is not JSON") from exc
    if isinstance(parsed, dict) and set(parsed) == {"facts"}:
        parsed = parsed["facts"]
    if not isinstance(parsed, list):
        raise ExtractorInvalidOutput("the content is not a list of facts")
    return parsed


@dataclass(frozen=True)
class ExtractedFact:
    text: str
    category: str
    confidence: float


def check_item(item, *, categories: tuple[str, ...], consented: set[str] | None) -> ExtractedFact | str:
    """The item as an ExtractedFact, or why it is invalid (a short reason without its text)."""
    if not isinstance(item, dict):
        return "not an object"
    if set(item) != ITEM_KEYS:
        return f"keys must be exactly {sorted(ITEM_KEYS)}"
    text, category, confidence = item["text"], item["category"], item["confidence"]
    if not isinstance(text, str) or not text.strip() or len(text) > FACT_TEXT_MAX:
        return f"text must be 1-{FACT_TEXT_MAX} characters"
    if "\x00" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return "text holds a character PostgreSQL cannot store"
    if not isinstance(category, str) or len(category) > CATEGORY_MAX:
        return f"category must be a string of at most {CATEGORY_MAX} characters"
    if categories and category not in categories:
        return "category is not one of the project's"
    if consented is not None and category not in consented:
        return "category not consented to by the subject"
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
        or not 0 <= confidence <= 1
    ):
        return "confidence must be a number from 0 to 1"
    return ExtractedFact(text=text.strip(), category=category, confidence=float(confidence))


def _normalised(text: str) -> str:
    return " ".join(text.split())


def guard_items(
    raw_items: list, *, event: Event, categories: tuple[str, ...], consented: set[str] | None
) -> tuple[list[ExtractedFact], dict[str, int]]:
    """The items that pass every guard, and how many each guard dropped."""
    kept, dropped = [], {"invalid": 0, "low_confidence": 0, "copied": 0}
    event_text = _normalised(event.text)
    for index, item in enumerate(raw_items):
        checked = check_item(item, categories=categories, consented=consented)
        if isinstance(checked, str):
            dropped["invalid"] += 1
            logger.warning("extraction of event %s: item %d dropped: %s", event.id, index, checked)
        elif checked.confidence < MIN_CONFIDENCE:
            dropped["low_confidence"] += 1
        elif len(checked.text) >= COPY_MIN_CHARS and _normalised(checked.text) in event_text:
            dropped["copied"] += 1
            logger.info("extraction of event %s: item %d dropped: copied from the event", event.id, index)
        else:
            kept.append(checked)
    return kept, dropped


@dataclass
class ExtractionOutcome:
    status: str
    error: str = ""
    fact_ids: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)


def _finish(event_id, *, status: str, error: str = "", calls: int = 0, fact_ids=None) -> None:
    changes = {"extraction_status": status, "extraction_error": error[:EXTRACTION_ERROR_MAX]}
    if fact_ids is not None:
        changes["extraction_fact_ids"] = fact_ids
    Event.objects.filter(id=event_id).update(extraction_attempts=F("extraction_attempts") + calls, **changes)


def event_extract(*, event_id, final_attempt: bool = True) -> ExtractionOutcome | None:
    """Extract the facts of one pending event and write them. Returns None when the event is gone or was
    already processed. A transport error past the one retry is raised again (ExtractorTransportError) unless
    `final_attempt`, for the queue to run the job later; it then marks the event failed."""
    event = Event.objects.filter(id=event_id).first()
    if event is None or event.extraction_status != ExtractionStatus.PENDING:
        return None
    if not enabled():
        _finish(event.id, status=ExtractionStatus.SKIPPED, error="extractor_off")
        return ExtractionOutcome(ExtractionStatus.SKIPPED, "extractor_off")
    project = selectors.project_settings(event.project_id)
    consented = None  # the categories the model may use, when consent limits them
    categories = project.categories
    if project.consent_required and project.consent_write_policy == ConsentWritePolicy.REFUSE:
        scope = (event.project_id, event.subject_id)
        consented = selectors.consented_categories([scope])[scope]
        if not consented:  # nothing could be stored: the event's text is not sent to the model at all
            _finish(event.id, status=ExtractionStatus.SKIPPED, error="no_consent")
            return ExtractionOutcome(ExtractionStatus.SKIPPED, "no_consent")
        categories = tuple(c for c in categories if c in consented) if categories else tuple(sorted(consented))
    calls = [0]
    try:
        answer = call_extractor(event.text, categories, calls_done=calls)
    except ExtractorTransportError as exc:
        if not final_attempt:
            _finish(event.id, status=ExtractionStatus.PENDING, error=exc.code, calls=calls[0])
            logger.warning("extraction of event %s: %s; the queue will try again", event.id, exc)
            raise
        logger.warning("extraction of event %s failed: %s", event.id, exc)
        _finish(event.id, status=ExtractionStatus.FAILED, error=exc.code, calls=calls[0])
        return ExtractionOutcome(ExtractionStatus.FAILED, exc.code)
    except ExtractorError as exc:
        logger.warning("extraction of event %s failed: %s", event.id, exc)
        _finish(event.id, status=ExtractionStatus.FAILED, error=exc.code, calls=calls[0])
        return ExtractionOutcome(ExtractionStatus.FAILED, exc.code)

    kept, dropped = guard_items(answer.items, event=event, categories=project.categories, consented=consented)
    try:
        fact_ids = _write(event, kept) if kept else []
    except Exception as exc:  # the embedder down, say: the event must not stay pending for ever
        logger.warning("extraction of event %s: the facts could not be written (%s)", event.id, exc.__class__.__name__)
        _finish(event.id, status=ExtractionStatus.FAILED, error="write_failed", calls=calls[0])
        return ExtractionOutcome(ExtractionStatus.FAILED, "write_failed")
    if fact_ids is None:  # erased meanwhile
        return None
    _finish(event.id, status=ExtractionStatus.DONE, calls=calls[0], fact_ids=fact_ids)
    logger.info(
        "extraction of event %s: %d item(s), %d fact(s) written or confirmed, dropped %s",
        event.id,
        len(answer.items),
        len(fact_ids),
        dropped,
    )
    return ExtractionOutcome(ExtractionStatus.DONE, fact_ids=fact_ids, dropped=dropped)


def _write(event: Event, kept: list[ExtractedFact]) -> list[str] | None:
    """Write the kept facts through the normal write path, with the event as their source. A consent revoked
    since the items were checked refuses the facts of that category alone: they are dropped and the rest
    written. None when the event was erased meanwhile."""
    items = [
        FactInput(
            project_id=event.project_id,
            subject_id=event.subject_id,
            text=f.text,
            category=f.category,
            source_event_id=event.id,
            metadata={"extraction": {"confidence": f.confidence}},
        )
        for f in kept
    ]
    while items:
        try:
            with transaction.atomic():
                results = fact_create_batch(items=items, actor=ACTOR)
            return list(dict.fromkeys(str(r.fact.id) for r in results))
        except ServiceValidationError as exc:
            if any(e.get("field") == "source_event_id" for e in exc.errors):
                return None
            refused = {e["index"] for e in exc.errors if e.get("index") is not None}
            if not refused:
                raise
            logger.warning("extraction of event %s: %d item(s) refused by the write path", event.id, len(refused))
            items = [it for i, it in enumerate(items) if i not in refused]
    return []
