"""A deterministic, realistic benchmark dataset of facts and events, and a fast loader for it.

    python scripts/bench_data.py --total 200000 --embedder hashing

Layout (`subject_sizes`), all in project "bench":
- small subjects "s-0000", "s-0001", ... hold a quarter of the total, but at least half of it up to 2,500
  facts (so a smoke run still has dozens of them); each holds 20-200 facts, most near 45 (a long tail);
- of the rest, "big" holds four fifths, capped at 100,000 facts;
- "mid-0", "mid-1", ... share what remains, at most 10,000 facts each.
So 200,000 gives big 100k + 5 mids of 10k + ~1,100 small subjects; 1,000,000 gives big 100k + 65 mids of
10k + 250k in small subjects; 5,000 gives big 2,000 + one mid of 500 + 2,500 in small subjects.
Events: a tenth of a subject's fact count, at least 2.

Every subject draws from its own random stream (seeded by seed and subject id), independent of `total`: a
subject's texts are the same in every run that holds it, and "big" in a 5,000 run is the first 2,000 facts
of "big" in a 200,000 run. That keeps the embedding cache valid across totals.

Texts are English with some French (the share varies per subject), about a protagonist and a cast of 8-20
people (each with a relation, a city and a job) and 5-11 places, reused across the subject's facts, so names
overlap and facts link (sister -> lives in -> city). The words are in bench/vocabulary.py and
bench/places.py, the sentences in bench/templates.py.
Timestamps are relative to `now` (default: today, midnight UTC) so volatile facts stay mostly unexpired whatever
the day; the texts never depend on it.
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np


from django.db import connection, transaction

from facts.text import normalise_text, text_hash
from hakimem.embeddings import _build
from bench.places import PLACES, STREETS
from bench.templates import (
    EN_EVENTS,
    EN_FACTS,
    EN_QUERIES,
    FR_EVENTS,
    FR_FACTS,
    FR_QUERIES,
)
from bench.vocabulary import (
    ALLERGENS,
    ANIMALS,
    COMPANIES,
    CONDITIONS,
    CUISINES,
    DEPARTMENTS,
    FEMALE_NAMES,
    FILM_GENRES,
    FOODS,
    HOBBIES,
    LANGUAGES,
    MALE_NAMES,
    MEDICATIONS,
    MONTHS,
    MUSIC,
    OBJECTS,
    OCCUPATIONS,
    PET_NAMES,
    PET_TREATS,
    RELATIONS,
    SEASONS,
    SPORTS,
    STUDIES,
    SURNAMES,
    WEEKDAYS,
)

PROJECT = "bench"
EMBED_DIM = 384  # facts.models.EMBED_DIM, which cannot be imported before django.setup() (main runs it)
BIG_CAP = 100_000
MID_CAP = 10_000
SMALL_MIN, SMALL_MAX = 20, 200
HISTORY_DAYS = 730  # recorded_from / occurred_at spread over the last two years
REBUILD_ABOVE_ROWS = 20_000  # above this, drop the hnsw indexes around the COPY and build them after
HNSW_INDEXES = ("facts_fact_embedding_hnsw", "facts_event_embedding_hnsw")

# Embedding cache chunks are content-defined (a chunk ends after a text whose crc32 is 0 modulo
# CHUNK_SPREAD, once it holds CHUNK_MIN texts), not fixed 10k slices: the boundaries then depend on the
# texts alone, so a run whose text list shares long runs with an earlier one (200k then 1M: same "big",
# same first mids, same first small subjects) finds the same chunks even where the offsets differ.
CHUNK_MIN, CHUNK_SPREAD, CHUNK_MAX = 5_000, 5_000, 20_000
REDRAWS = 8  # fresh draws before a text already held gets a dated variant


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _gendered(text: str, gender: str) -> str:
    masculine, _, feminine = text.partition("/")
    return feminine if feminine and gender == "f" else masculine


def _an(noun: str) -> str:
    """English article by sound: an architect, an HR manager (an acronym reads letter by letter)."""
    word = noun.split()[0]
    vowel_sound = word[0] in "AEFHILMNORSX" if word.isupper() else word[0].lower() in "aeiou"
    return ("an " if vowel_sound else "a ") + noun


def _a(noun: str) -> str:
    """French "à" before a noun with its article or a place: au Havre, aux sushis, à la pénicilline."""
    if noun[:3].lower() == "le ":
        return "au " + noun[3:]
    if noun[:4].lower() == "les ":
        return "aux " + noun[4:]
    return "à " + noun


def _que(name: str) -> str:
    return ("qu'" if name[0].lower() in "aeiouyéèêàâîôœh" else "que ") + name


def _de(noun: str, *, elide_h: bool = False) -> str:
    """French "de": du Havre, des sushis, d'Annecy, d'Hugo (a first name's h is mute; a place's often not)."""
    if noun[:3].lower() == "le ":
        return "du " + noun[3:]
    if noun[:4].lower() == "les ":
        return "des " + noun[4:]
    vowels = "aeiouyéèêàâîôœ" + ("h" if elide_h else "")
    return ("d'" if noun[0].lower() in vowels else "de ") + noun


# --- subjects and their casts ---------------------------------------------------------------------------


class Person(NamedTuple):
    first: str
    last: str
    gender: str
    rel_en: str
    rel_fr: str
    city: tuple[str, str]
    job: tuple[str, str]  # French form already agreed with the person's gender


@dataclass(frozen=True)
class Cast:
    first: str
    last: str
    gender: str
    places: list[tuple[str, str]]  # the first is home
    people: list[Person]
    companies: list[str]
    pets: list[tuple[str, tuple[str, str]]]  # (name, animal)
    french_share: float


def subject_sizes(total: int, seed: int = 7) -> list[tuple[str, int]]:
    """(subject_id, fact count) for every subject, in load order; the rule is in the module docstring."""
    small_total = max(total // 4, min(2_500, total // 2))
    rest = total - small_total
    big = min(BIG_CAP, rest * 4 // 5)
    mid_total = rest - big
    sizes = [("big", big)] if big else []
    n_mid = -(-mid_total // MID_CAP)
    sizes += [(f"mid-{i}", mid_total // n_mid + (i < mid_total % n_mid)) for i in range(n_mid)]

    # The size stream does not depend on `total`: a larger run starts with the same small subjects.
    rng = random.Random(f"{seed}/sizes")
    remaining, index = small_total, 0
    while remaining > 0:
        size = min(SMALL_MAX, SMALL_MIN + int(rng.expovariate(1 / 25)))
        if remaining - size < SMALL_MIN:  # never leave a remainder too small to be a subject of its own
            size = remaining if remaining <= SMALL_MAX else remaining - SMALL_MIN
        sizes.append((f"s-{index:04d}", size))
        remaining -= size
        index += 1
    return sizes


def _cast(seed: int, subject_id: str) -> Cast:
    rng = random.Random(f"{seed}/{subject_id}/cast")
    gender = rng.choice("fm")
    first = rng.choice(FEMALE_NAMES if gender == "f" else MALE_NAMES)
    last = rng.choice(SURNAMES)
    places = rng.sample(PLACES, rng.randint(5, 11))
    pool = [(n, "f") for n in FEMALE_NAMES] + [(n, "m") for n in MALE_NAMES]
    people = []
    for name, person_gender in rng.sample(pool, rng.randint(8, 20) + 1):
        if name == first:
            continue
        relation = rng.choice([r for r in RELATIONS if r.gender in ("n", person_gender)])
        job_en, job_fr = rng.choice(OCCUPATIONS)
        people.append(
            Person(
                first=name,
                last=last if relation.family else rng.choice(SURNAMES),
                gender=person_gender,
                rel_en=relation.en,
                rel_fr=_gendered(relation.fr, person_gender),
                # most of the cast lives in one of the subject's places, which links "lives in" to travel facts
                city=rng.choice(places) if rng.random() < 0.7 else rng.choice(PLACES),
                job=(job_en, _gendered(job_fr, person_gender)),
            )
        )
    pets = [(name, rng.choice(ANIMALS)) for name in rng.sample(PET_NAMES, rng.randint(1, 3))]
    return Cast(
        first,
        last,
        gender,
        places,
        people,
        rng.sample(COMPANIES, rng.randint(2, 4)),
        pets,
        rng.choice((0.05, 0.1, 0.15, 0.25, 0.4)),
    )


class _Slots(dict):
    """Template values, drawn on first use (str.format_map asks for each field), so a template pays only
    for the fields it has, and two fields of one template agree (city and a_city_fr name the same city)."""

    def __init__(self, cast: Cast, rng: random.Random):
        super().__init__()
        self.cast, self.rng = cast, rng
        self.p, self.q = rng.sample(cast.people, 2)

    def __missing__(self, key: str) -> str:
        value = self[key] = _SLOT_MAKERS[key](self)
        return value

    def place(self) -> tuple[str, str]:
        # mostly the subject's own places, sometimes anywhere: travel reaches beyond the usual cities
        return self.rng.choice(self.cast.places) if self.rng.random() < 0.75 else self.rng.choice(PLACES)


def _hour(s: _Slots) -> tuple[int, int]:
    return s.rng.randint(7, 20), s.rng.choice((0, 15, 30, 45))


_SLOT_MAKERS = {
    "me": lambda s: s.cast.first,
    "de_me": lambda s: _de(s.cast.first, elide_h=True),
    "que_me": lambda s: _que(s.cast.first),
    "home": lambda s: s.cast.places[0][0],
    "p": lambda s: s.p.first,
    "q": lambda s: s.q.first,
    "p_full": lambda s: f"{s.p.first} {s.p.last}",
    "de_p": lambda s: _de(s.p.first, elide_h=True),
    "que_p": lambda s: _que(s.p.first),
    "rel": lambda s: s.p.rel_en,
    "rel_fr": lambda s: s.p.rel_fr,
    "pcity": lambda s: s.p.city[0],
    "a_pcity_fr": lambda s: _a(s.p.city[1]),
    "a_pjob": lambda s: _an(s.p.job[0]),
    "pjob_fr": lambda s: s.p.job[1],
    "_city": lambda s: s.place(),
    "city": lambda s: s["_city"][0],
    "city_fr": lambda s: s["_city"][1],
    "a_city_fr": lambda s: _a(s["_city"][1]),
    "de_city_fr": lambda s: _de(s["_city"][1]),
    "_city2": lambda s: s.rng.choice([c for c in PLACES if c != s["_city"]]),
    "city2": lambda s: s["_city2"][0],
    "a_city2_fr": lambda s: _a(s["_city2"][1]),
    "_job": lambda s: s.rng.choice(OCCUPATIONS),
    "a_job": lambda s: _an(s["_job"][0]),
    "de_job_fr": lambda s: _de(_gendered(s["_job"][1], s.cast.gender), elide_h=True),
    "company": lambda s: s.rng.choice(s.cast.companies) if s.rng.random() < 0.7 else s.rng.choice(COMPANIES),
    "_food": lambda s: s.rng.choice(FOODS),
    "food": lambda s: s["_food"][0],
    "food_fr": lambda s: s["_food"][1],
    "_food2": lambda s: s.rng.choice([f for f in FOODS if f != s["_food"]]),
    "food2": lambda s: s["_food2"][0],
    "a_food2_fr": lambda s: _a(s["_food2"][1]),
    "_hobby": lambda s: s.rng.choice(HOBBIES),
    "hobby": lambda s: s["_hobby"][0],
    "hobby_fr": lambda s: s["_hobby"][1],
    "_sport": lambda s: s.rng.choice(SPORTS),
    "sport": lambda s: s["_sport"][0],
    "sport_fr": lambda s: s["_sport"][1],
    "_obj": lambda s: s.rng.choice(OBJECTS),
    "obj": lambda s: s["_obj"][0],
    "obj_fr": lambda s: s["_obj"][1],
    "_lang": lambda s: s.rng.choice(LANGUAGES),
    "lang": lambda s: s["_lang"][0],
    "lang_fr": lambda s: s["_lang"][1],
    "lang2": lambda s: s.rng.choice([lang for lang in LANGUAGES if lang != s["_lang"]])[0],
    "_cond": lambda s: s.rng.choice(CONDITIONS),
    "cond": lambda s: s["_cond"][0],
    "cond_fr": lambda s: s["_cond"][1],
    "_allergen": lambda s: s.rng.choice(ALLERGENS),
    "allergen": lambda s: s["_allergen"][0],
    "a_allergen_fr": lambda s: _a(s["_allergen"][1]),
    "med": lambda s: s.rng.choice(MEDICATIONS),
    "study": lambda s: s.rng.choice(STUDIES),
    "_dept": lambda s: s.rng.choice(DEPARTMENTS),
    "dept": lambda s: s["_dept"][0],
    "dept_fr": lambda s: s["_dept"][1],
    "music": lambda s: s.rng.choice(MUSIC),
    "_cuisine": lambda s: s.rng.choice(CUISINES),
    "a_cuisine": lambda s: _an(s["_cuisine"][0]),
    "cuisine_fr": lambda s: s["_cuisine"][1],
    "genre": lambda s: s.rng.choice(FILM_GENRES),
    "street": lambda s: s.rng.choice(STREETS),
    "season": lambda s: s.rng.choice(SEASONS),
    "doctor": lambda s: s.rng.choice(SURNAMES),
    "_pet": lambda s: s.rng.choice(s.cast.pets),
    "pet": lambda s: s["_pet"][0],
    "pet_animal": lambda s: s["_pet"][1][0],
    "pet_animal_fr": lambda s: s["_pet"][1][1],
    "pet_treat": lambda s: s.rng.choice(PET_TREATS),
    "pet_age": lambda s: s.rng.randint(1, 15),
    "_month": lambda s: s.rng.choice(MONTHS),
    "month": lambda s: s["_month"][0],
    "month_fr": lambda s: s["_month"][1],
    "_weekday": lambda s: s.rng.choice(WEEKDAYS),
    "weekday": lambda s: s["_weekday"][0],
    "weekday_fr": lambda s: s["_weekday"][1],
    "_hour": _hour,
    "hour": lambda s: "{}:{:02d}".format(*s["_hour"]),
    "hour_fr": lambda s: "{}h{:02d}".format(*s["_hour"]),
    "day": lambda s: s.rng.randint(1, 28),
    "year": lambda s: s.rng.randint(2012, 2025),
    "year_past": lambda s: s.rng.randint(1985, 2020),
    "year_birth": lambda s: s.rng.randint(1940, 2022),
    "year_future": lambda s: s.rng.randint(2026, 2030),
    "n_kids": lambda s: s.rng.randint(1, 4),
    "n_days": lambda s: s.rng.randint(2, 21),
    "n_months": lambda s: s.rng.choice((3, 6, 12)),
    "km": lambda s: s.rng.randint(3, 60),
    "price": lambda s: s.rng.choice((15, 25, 40, 60, 85, 120, 150, 240, 300, 450, 800, 1200, 2500)),
    "salary": lambda s: s.rng.randrange(1800, 6500, 50),
}


# (permanent, stable, volatile) weights: plans and schedules change, family and health facts stay.
VOLATILITY = {
    "schedule": (40, 20, 40),
    "travel": (60, 25, 15),
    "work": (70, 30, 0),
    "place": (70, 30, 0),
    "preference": (75, 25, 0),
}
VOLATILITY_DEFAULT = (95, 5, 0)
VOLATILITY_NAMES = ("permanent", "stable", "volatile")
# Recorded within these many days, so that most stay inside their TTL (stable 365, volatile 7 by default).
RECENT_DAYS = {"permanent": HISTORY_DAYS, "stable": 400, "volatile": 9}


# --- generators -----------------------------------------------------------------------------------------


def _today(now: datetime | None) -> datetime:
    return now or datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _distinct(draw: Callable[[], tuple[str, bool, object]], seen: set[str], rng: random.Random) -> tuple[str, object]:
    """A text the subject does not hold yet (the database allows one active fact per normalised text and
    scope), with the payload `draw` returned alongside it. A few fresh draws first, so that a large subject
    moves on to other templates once it has said everything a small one can; then a dated variant."""
    for _ in range(REDRAWS):
        text, french, payload = draw()
        if normalise_text(text) not in seen:
            break
    else:
        base = text.rstrip(".")
        while normalise_text(text) in seen:
            date = f"{rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}/{rng.randint(2024, 2026)}"
            text = f"{base} (note du {date})." if french else f"{base} (noted {date})."
    seen.add(normalise_text(text))
    return text, payload


def _draw_fact(cast: Cast, rng: random.Random) -> tuple[str, bool, tuple[str, str]]:
    french = rng.random() < cast.french_share
    category, kind, template = rng.choice(FR_FACTS if french else EN_FACTS)
    return template.format_map(_Slots(cast, rng)), french, (category, kind)


def _draw_event(cast: Cast, rng: random.Random) -> tuple[str, bool, None]:
    french = rng.random() < cast.french_share
    return rng.choice(FR_EVENTS if french else EN_EVENTS).format_map(_Slots(cast, rng)), french, None


def _ago(rng: random.Random, anchor: datetime, days: int) -> datetime:
    return anchor - timedelta(seconds=rng.randrange(days * 86_400))


def generate_facts(total: int, seed: int = 7, now: datetime | None = None) -> Iterator[dict]:
    """Facts for every subject of `subject_sizes(total, seed)`, subject after subject. Each is a dict of
    project_id, subject_id, text, recorded_from, valid_from (None for most), last_confirmed_at (=
    recorded_from), volatility, kind, category, importance."""
    anchor = _today(now)
    for subject_id, count in subject_sizes(total, seed):
        cast = _cast(seed, subject_id)
        rng = random.Random(f"{seed}/{subject_id}/facts")
        seen: set[str] = set()

        for _ in range(count):
            text, (category, kind) = _distinct(partial(_draw_fact, cast, rng), seen, rng)
            volatility = rng.choices(VOLATILITY_NAMES, VOLATILITY.get(category, VOLATILITY_DEFAULT))[0]
            recorded_from = _ago(rng, anchor, RECENT_DAYS[volatility])
            valid_from = recorded_from - timedelta(days=rng.randrange(365)) if rng.random() < 0.3 else None
            yield {
                "project_id": PROJECT,
                "subject_id": subject_id,
                "text": text,
                "recorded_from": recorded_from,
                "valid_from": valid_from,
                "last_confirmed_at": recorded_from,
                "volatility": volatility,
                "kind": kind,
                "category": category,
                "importance": round(rng.betavariate(2, 2), 2),
            }


def generate_events(total: int, seed: int = 7, now: datetime | None = None) -> Iterator[dict]:
    """Events for every subject: a tenth of its fact count, at least 2. Each is a dict of project_id,
    subject_id, text, occurred_at, recorded_at (a few hours to days later, never after `now`)."""
    anchor = _today(now)
    for subject_id, count in subject_sizes(total, seed):
        cast = _cast(seed, subject_id)
        rng = random.Random(f"{seed}/{subject_id}/events")
        seen: set[str] = set()

        for _ in range(max(2, round(count / 10))):
            text, _ = _distinct(partial(_draw_event, cast, rng), seen, rng)
            occurred_at = _ago(rng, anchor, HISTORY_DAYS)
            yield {
                "project_id": PROJECT,
                "subject_id": subject_id,
                "text": text,
                "occurred_at": occurred_at,
                "recorded_at": min(anchor, occurred_at + timedelta(seconds=rng.randrange(3 * 86_400))),
            }


def generate_queries(n: int, seed: int = 7, subject_id: str = "big") -> list[str]:
    """`n` distinct questions (a quarter in French) about the cast of `subject_id` as generated with the
    same `seed`, so that they name people and places the subject's facts hold. Fewer if the templates
    cannot make `n` distinct ones."""
    cast = _cast(seed, subject_id)
    rng = random.Random(f"{seed}/{subject_id}/queries")
    queries: dict[str, None] = {}  # insertion-ordered set
    for _ in range(n * 20):
        if len(queries) == n:
            break
        template = rng.choice(FR_QUERIES if rng.random() < 0.25 else EN_QUERIES)
        queries[template.format_map(_Slots(cast, rng))] = None
    return list(queries)


# --- embeddings -----------------------------------------------------------------------------------------


def _chunk_bounds(texts: list[str]) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for i, text in enumerate(texts):
        size = i + 1 - start
        if size >= CHUNK_MAX or (size >= CHUNK_MIN and zlib.crc32(text.encode("utf-8")) % CHUNK_SPREAD == 0):
            bounds.append((start, i + 1))
            start = i + 1
    if start < len(texts):
        bounds.append((start, len(texts)))
    return bounds


def embed_cached(texts: list[str], provider: str, cache_dir: Path) -> np.ndarray:
    """Unit vectors (float32, (len(texts), 384)) for `texts`, encoded chunk by chunk; each chunk is kept in
    `cache_dir` as <provider>-<sha256 of the chunk's texts>.npy and never encoded again."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    embedder = _build(provider, EMBED_DIM, "", "", "", 10.0)
    out = np.empty((len(texts), EMBED_DIM), dtype=np.float32)
    bounds = _chunk_bounds(texts)
    for number, (start, end) in enumerate(bounds, 1):
        digest = hashlib.sha256()
        for text in texts[start:end]:
            digest.update(text.encode("utf-8") + b"\0")
        path = cache_dir / f"{provider}-{digest.hexdigest()}.npy"
        began = time.perf_counter()
        if path.exists():
            out[start:end] = np.load(path)
            how = "cached"
        else:
            out[start:end] = embedder.embed(texts[start:end])
            staging = path.with_suffix(".partial")  # an interrupted run must not leave a truncated cache file
            with staging.open("wb") as fh:
                np.save(fh, out[start:end])
            staging.replace(path)
            how = "encoded"
        _log(
            f"embed {provider}: chunk {number}/{len(bounds)} ({end - start} texts) {how} in "
            f"{time.perf_counter() - began:.1f}s"
        )
    return out


# --- loading --------------------------------------------------------------------------------------------

# pgvector's text form ("%.7g" per value; the halfvec column rounds), with one % per row instead of one per value:
# formatting is the COPY's main cost on the Python side.
_VECTOR_ROW = "[" + ",".join(["%.7g"] * EMBED_DIM) + "]"

FACT_COPY = (
    "COPY facts_fact (id, project_id, subject_id, text, text_hash, embedding, status, category, kind, "
    "importance, volatility, valid_from, recorded_from, last_confirmed_at, metadata) FROM STDIN"
)
EVENT_COPY = (
    "COPY facts_event (id, project_id, subject_id, text, occurred_at, embedding, metadata, recorded_at) FROM STDIN"
)


def _index_definitions(cursor) -> dict[str, str]:
    """The hnsw indexes' CREATE INDEX statements, as the migrations made them, by index name."""
    cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)", [list(HNSW_INDEXES)])
    return dict(cursor.fetchall())


def _copy_rows(cursor, facts, fact_vectors, events, event_vectors, seed: int) -> None:
    ids = random.Random(f"{seed}/ids")

    def new_id() -> uuid.UUID:
        return uuid.UUID(int=ids.getrandbits(128), version=4)

    fact_ids = [new_id() for _ in facts]
    event_ids = [new_id() for _ in events]
    # Rows go in in the order a live service would have written them (by time, subjects interleaved), so
    # a subject's rows are spread over the table as in production, not packed into adjacent pages.
    with cursor.copy(FACT_COPY) as copy:
        for i in sorted(range(len(facts)), key=lambda i: facts[i]["recorded_from"]):
            f = facts[i]
            copy.write_row(
                (
                    fact_ids[i],
                    f["project_id"],
                    f["subject_id"],
                    f["text"],
                    text_hash(f["text"]),
                    _VECTOR_ROW % tuple(fact_vectors[i].tolist()),
                    "active",
                    f["category"],
                    f["kind"],
                    f["importance"],
                    f["volatility"],
                    f["valid_from"],
                    f["recorded_from"],
                    f["last_confirmed_at"],
                    "{}",
                )
            )
    with cursor.copy(EVENT_COPY) as copy:
        for i in sorted(range(len(events)), key=lambda i: events[i]["recorded_at"]):
            e = events[i]
            copy.write_row(
                (
                    event_ids[i],
                    e["project_id"],
                    e["subject_id"],
                    e["text"],
                    e["occurred_at"],
                    _VECTOR_ROW % tuple(event_vectors[i].tolist()),
                    "{}",
                    e["recorded_at"],
                )
            )


def load(
    total: int,
    provider: str,
    cache_dir: Path,
    seed: int = 7,
    *,
    rebuild_indexes: bool | None = None,
    now: datetime | None = None,
) -> dict:
    """Replace project "bench" with the dataset for `total` facts; returns counts, timings (seconds) and the
    hnsw index sizes (MB).

    With more than REBUILD_ABOVE_ROWS rows (or rebuild_indexes=True), the two hnsw indexes are dropped
    before the COPY and built again after it, in the same transaction: 200k facts + 20k events load in
    ~12 s + ~40 s of builds, against ~270 s of COPY into the live indexes. The tables stay locked (reads and
    writes of every project wait) until that transaction commits, and the build covers every project's
    rows: do not load while something else uses the database."""
    from privacy.services import project_erase  # needs the apps loaded: django.setup(), which main runs

    began = time.perf_counter()
    anchor = _today(now)
    facts = list(generate_facts(total, seed, anchor))
    events = list(generate_events(total, seed, anchor))
    result = {
        "total": total,
        "provider": provider,
        "seed": seed,
        "facts": len(facts),
        "events": len(events),
        "subjects": len(subject_sizes(total, seed)),
        "generate_s": round(time.perf_counter() - began, 2),
    }
    _log(f"generated {len(facts)} facts and {len(events)} events in {result['generate_s']}s")

    mark = time.perf_counter()
    fact_vectors = embed_cached([f["text"] for f in facts], provider, cache_dir)
    event_vectors = embed_cached([e["text"] for e in events], provider, cache_dir)
    result["embed_s"] = round(time.perf_counter() - mark, 2)

    rebuild = len(facts) + len(events) > REBUILD_ABOVE_ROWS if rebuild_indexes is None else rebuild_indexes
    result["index_strategy"] = "rebuild" if rebuild else "keep"
    with connection.cursor() as cursor:
        mark = time.perf_counter()
        with transaction.atomic():
            # The previous run's rows, with the traces of its context calls on these facts.
            project_erase(project_id=PROJECT)
        # Frees the deleted rows' space for the COPY, and their entries in the hnsw graphs, which a COPY into
        # a kept index would otherwise grow around. A few seconds even for 200k deleted rows.
        cursor.execute("VACUUM facts_fact, facts_event")
        result["delete_s"] = round(time.perf_counter() - mark, 2)
        _log(f"deleted the previous rows in {result['delete_s']}s; copying ({result['index_strategy']} hnsw)")

        # One transaction from DROP to CREATE: other sessions wait on the lock rather than ever finding the
        # tables without their hnsw indexes, and an interrupted load rolls the indexes back with the rows.
        with transaction.atomic():
            definitions = _index_definitions(cursor) if rebuild else {}
            for name in definitions:
                cursor.execute(f"DROP INDEX {name}")
            mark = time.perf_counter()
            _copy_rows(cursor, facts, fact_vectors, events, event_vectors, seed)
            result["copy_s"] = round(time.perf_counter() - mark, 2)
            _log(f"copied in {result['copy_s']}s")
            if rebuild:
                # The copied rows queued the deferred foreign-key checks (superseded_by, source_event), and
                # CREATE INDEX refuses a table with pending trigger events: run them now rather than at
                # commit (the same work, earlier).
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                cursor.execute("SET LOCAL maintenance_work_mem = '1GB'")
                for name, definition in definitions.items():
                    mark = time.perf_counter()
                    cursor.execute(definition)
                    result[f"{name}_build_s"] = round(time.perf_counter() - mark, 2)
                    _log(f"built {name} in {result[f'{name}_build_s']}s")
        mark = time.perf_counter()
        # What autovacuum would do after a bulk insert: statistics for the planner, and the visibility map
        # that lets the exact dense leg read facts_fact_scope_vectors without visiting the heap.
        cursor.execute("VACUUM (ANALYZE) facts_fact, facts_event")
        result["analyze_s"] = round(time.perf_counter() - mark, 2)
        # And what the nightly consolidation does: the words of every large scope counted (context calls read them).
        from django.conf import settings

        from facts.scope_words import scope_words_refresh

        mark = time.perf_counter()
        result["scope_words_counted"] = scope_words_refresh(min_items=settings.HAKI_SCOPE_WORDS_MIN_ITEMS)
        result["scope_words_s"] = round(time.perf_counter() - mark, 2)
        for name in HNSW_INDEXES:
            cursor.execute("SELECT pg_relation_size(%s::regclass)", [name])
            result[f"{name}_mb"] = round(cursor.fetchone()[0] / 2**20, 1)
    result["total_s"] = round(time.perf_counter() - began, 2)
    return result
