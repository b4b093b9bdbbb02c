"""A deterministic, realistic benchmark dataset of facts, events and questions (bench/loader.py embeds it and
copies it into the database: scripts/bench_data.py).

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

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import NamedTuple

from facts.text import normalise_text
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
BIG_CAP = 100_000
MID_CAP = 10_000
SMALL_MIN, SMALL_MAX = 20, 200
HISTORY_DAYS = 730  # recorded_from / occurred_at spread over the last two years
REDRAWS = 8  # fresh draws before a text already held gets a dated variant


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


def today(now: datetime | None) -> datetime:
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
    anchor = today(now)
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
    anchor = today(now)
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
