"""Reading a text: its sentences, each predicate found in them with its holder, and the claims they make."""

from __future__ import annotations

import functools
import re

from facts.claims.clashes import COUNT, DATE, LEVEL, POLAR, SINGLE, STATE, Claim, _count
from facts.claims.cues import CueFinder, pattern_cues
from facts.claims.holders import _CLAUSE_APPOSITIVE_RE, _holder
from facts.claims.patterns import (
    _CONDITIONS,
    _DEGREES,
    _HABIT_VERBS,
    _INTRANSITIVE,
    _LANGUAGES,
    _NATIONALITIES,
    _PATTERNS,
    _PLAIN_NEGATIONS,
    _RELIGIONS,
    _SHIFTS,
)
from facts.claims.values import (
    DIETS,
    _COUNT_NOUNS,
    _EXISTS,
    _FAVOURITE_KINDS,
    _MARITAL,
    _NUMBER_WORDS,
    _cut,
    _date_parts,
    _job,
    _number,
    _object_head,
    _stem,
    _value_words,
    food_groups,
)
from facts.claims.words import _FIRST_PERSON, _NOT_NAMES, _RELATIONS, _SELF_WORDS, _VALUE_STOP, _fold, _names, _tokens

_APOSTROPHES = str.maketrans({"’": "'", "`": "'", "ʼ": "'"})
_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|\n+")
_STAMP_RE = re.compile(r"^\s*\[[^\]\n]{1,80}\]\s*")
_SPEAKER_RE = re.compile(r"^\s*([A-Z][\w-]{1,30}):\s+")


def _sentences(text: str) -> tuple[str | None, list[str]]:
    text = _STAMP_RE.sub("", text.translate(_APOSTROPHES), count=1)
    speaker = None
    match = _SPEAKER_RE.match(text)
    if match and _fold(match.group(1)) not in _NOT_NAMES:
        speaker, text = match.group(1), text[match.end() :]
    return speaker, [s for s in _SENTENCE_RE.split(text) if s.strip()]


_PAST_RE = re.compile(
    r"\b(?:used to|formerly|previously|once|as a child|as a kid|when (?:he|she|i|they) was|in the past|"
    r"autrefois|auparavant|avant|quand (?:il|elle|j') ?étai[st]|enfant,|jadis|until|jusqu'en|ago|il y a|"
    r"would like|wants to|want to|plans to|planning to|hopes to|dreams of|might|may|could|would|"
    r"if|si |veut|voudrait|aimerait|envisage|pense à|compte)\b",
    re.IGNORECASE,
)
_QUESTION_RE = re.compile(r"\?\s*$")


@functools.lru_cache(maxsize=2048)
def read(text: str) -> tuple[Claim, ...]:
    """The claims a fact makes, in order; () when no pattern recognises it. Cached: the write path and a
    context call read the same texts again and again."""
    speaker, sentences = _sentences(text)
    claims: list[Claim] = []
    before = ""  # the sentences read so far: whom a later "she" or "il" stands for
    for sentence in sentences:
        if not _QUESTION_RE.search(sentence) and len(sentence) <= 400:
            claims += _read_sentence(sentence, speaker, before)
        before += sentence + " "
    return tuple(dict.fromkeys(claims))


# A count of dogs or sons says whether there are pets or children at all: "has no pets" / "adopted a dog".
_COUNT_GROUPS = {
    noun: group
    for group, nouns in {
        "pets": "dogs cats fish horses rabbits hamsters birds chickens",
        "children": "sons daughters",
    }.items()
    for noun in nouns.split()
}


def _implied(claim: Claim) -> list[Claim]:
    if claim.attribute == "vehicle":  # "drives a Golf": there is a car
        return [Claim(claim.holder, "count:cars", COUNT, frozenset(["any"]), shown=claim.shown)]
    if claim.kind == COUNT:
        group = _COUNT_GROUPS.get(claim.attribute.split(":", 1)[1])
        count = _count(claim.value)
        if group and count:
            return [Claim(claim.holder, f"count:{group}", COUNT, frozenset(["any"]), shown=claim.shown)]
    if claim.attribute.startswith("habit:") and claim.kind == POLAR:
        return _eaten(claim)
    if claim.attribute.startswith("condition:") and claim.attribute != "condition:any" and claim.positive:
        return [Claim(claim.holder, "condition:any", POLAR, frozenset(), positive=True, shown=claim.shown)]
    if claim.attribute.startswith("allergy:") and claim.attribute != "allergy:any" and claim.positive:
        return [Claim(claim.holder, "allergy:any", POLAR, frozenset(), positive=True, shown=claim.shown)]
    return []


# The patterns with their cues (facts.claims.cues): a sentence is searched only with those whose cues it holds.
_CUED_PATTERNS = [(attribute, kind, pattern, pattern_cues(pattern)) for attribute, kind, pattern in _PATTERNS]
_CUES = CueFinder(cue for *_, cues in _CUED_PATTERNS for cue in cues or ())


def _read_sentence(sentence: str, speaker: str | None, before: str = "") -> list[Claim]:
    found: list[Claim] = []
    taken: dict[str, list[tuple[int, int]]] = {}  # per attribute, spans already read by an earlier pattern
    sentence_holder = None
    present = _CUES(sentence)
    for attribute, kind, pattern, cues in _CUED_PATTERNS:
        if cues is not None and cues.isdisjoint(present):
            continue
        for match in pattern.finditer(sentence):
            start, end = match.span()
            if any(s <= start < e for s, e in taken.get(attribute, ())):
                continue
            clause = sentence[:start]
            # the clause the predicate is in: what follows the last comma or conjunction before it, unless
            # that leaves no subject (a second verb of the same subject)
            prefix = re.split(r"[,;:]\s+(?=[a-zà-ÿ])|\s+(?:and|but|et|mais)\s+", clause)[-1]
            if _PAST_RE.search(clause[-60:]):
                continue
            appositive = _CLAUSE_APPOSITIVE_RE.match(clause)
            if match.groupdict().get("h"):  # French: "l'anniversaire de Paul"
                holder = _holder(match.group("h"), speaker, None)
            elif appositive and _fold(appositive.group(1)) not in _NOT_NAMES:  # "Inès, la fille de Nadège, a"
                holder = _fold(appositive.group(1))
            else:
                holder = _holder(prefix, speaker, sentence_holder, context=before + clause)
            if holder.startswith("thing:") or (attribute == "age" and not _states_age(match, prefix)):
                continue
            claim = _claim(attribute, kind, match, holder)
            if claim is None:
                continue
            taken.setdefault(attribute, []).append((start, end))
            sentence_holder = sentence_holder or claim.holder
            found.append(claim)
            found += _implied(claim)
    return found


def _states_age(match: re.Match, prefix: str) -> bool:
    """'is 34' is an age only of a person named just before it, or with years ('34 years old', '34 ans')."""
    if re.search(r"years?\b|\byo\b|\bans\b|turn|aged|age|birthday|ties\b", match.group(0), re.IGNORECASE):
        return True
    tokens = _tokens(prefix)
    last = _fold(tokens[-1]) if tokens else ""
    return bool(tokens) and (tokens[-1][:1].isupper() or last in _SELF_WORDS | _FIRST_PERSON or last in _RELATIONS)


_DECADES = {
    "twenties": 20,
    "thirties": 30,
    "forties": 40,
    "fifties": 50,
    "sixties": 60,
    "seventies": 70,
    "eighties": 80,
}
_EAT_RE = re.compile(r"\b(?:eats|eat|eating|ate|mange|manges|mangent|manger)\s+(.*)", re.IGNORECASE)


def _eaten(claim: Claim) -> list[Claim]:
    """What a diet or a meal says of each food group: a vegan eats no fish, eggs or dairy either; 'eats pasta'
    eats grain and gluten."""
    if claim.attribute.startswith("habit:eat:"):
        if claim.positive:
            return []
        diet = next((DIETS[w] for w in map(_fold, _tokens(claim.shown)) if w in DIETS), ())
        group = claim.attribute.rsplit(":", 1)[1]
        return [
            Claim(claim.holder, f"habit:eat:{g}", POLAR, frozenset(), False, claim.shown) for g in diet if g != group
        ]
    eaten = _EAT_RE.search(claim.shown)
    if eaten is None:
        return []
    return [
        Claim(claim.holder, f"habit:eat:{g}", POLAR, frozenset(), claim.positive, claim.shown)
        for g in sorted(food_groups(eaten.group(1)))
    ]


_DATED_MOVE_RE = re.compile(
    r"(?:moved|relocated|installée?|déménagé)\b.*\b(?:in|en)\s+(?:1[89]|20)\d\d\b", re.IGNORECASE
)


def _claim(attribute: str, kind: str, match: re.Match, holder: str) -> Claim | None:
    groups = match.groupdict()
    span = _cut(groups.get("v") or "")
    if kind == SINGLE:
        if attribute == "residence" and _DATED_MOVE_RE.search(match.group(0)):
            return None  # "moved to Glasgow in 2020": an event, which a later "lives in Scotland" does not deny
        if (
            attribute == "residence"
            and re.search(r"\b(?:moved|relocated)\b", match.group(0), re.IGNORECASE)
            and not _names(_tokens(span), first_at_start=False)
        ):
            return None  # "has moved to cardiology outpatients": a move that names no place
        if attribute == "age" and _fold(match.group("v")) in _DECADES:  # "in his (early) twenties"
            low = (
                _DECADES[_fold(match.group("v"))]
                + {"early": 0, "mid": 3, "late": 6, None: 0}[groups.get("third") and _fold(groups["third"])]
            )
            value = frozenset(str(a) for a in range(low, low + (10 if groups.get("third") is None else 4)))
        elif attribute == "age":
            age = _number(match.group("v"))
            if age is None or age > 120:
                return None
            value = frozenset([str(age)])
        elif attribute == "nationality":
            value = frozenset([_NATIONALITIES[_fold(match.group("v"))]])
        elif attribute == "native_language":
            value = frozenset([_LANGUAGES[_fold(match.group("v"))]])
        elif attribute == "religion":
            value = frozenset([_RELIGIONS[_fold(match.group("v"))] if match.group("v") else "none"])
            span = span or match.group(0).strip()
        elif attribute == "shift":
            value = frozenset([_SHIFTS[_fold(match.group("v"))]])
        elif attribute in ("phone", "email"):
            kind_of = _CONTACT_KINDS.get(_fold(groups.get("k") or ""), "main")
            attribute = f"{attribute}:{kind_of}"
            raw = match.group("v")
            # a number's last nine digits: "06 12 34 56 78" and "+33 6 12 34 56 78" are one number
            value = frozenset([re.sub(r"\D", "", raw)[-9:] if attribute.startswith("phone") else raw.casefold()])
        elif attribute == "vehicle":
            value = frozenset(_names(_tokens(span), first_at_start=False))
        elif attribute == "studies":
            value = frozenset(
                _stem(_fold(t))
                for t in _tokens(re.split(r"\s+(?:at|in|à|au|en)\s+", span)[0])
                if _fold(t) not in _VALUE_STOP
            )
        elif attribute == "schedule":
            thing = _object_head(groups["n"])
            if thing is None:
                return None
            attribute = f"schedule:{thing}"
            value = frozenset([_fold(groups["v"]).rstrip("s")])
        elif attribute == "favourite":
            thing = _object_head(
                groups["n"].split(None, 1)[1] if groups["n"].split()[0].startswith(("favo", "pref")) else groups["n"]
            )
            if thing is None:
                return None
            thing = re.sub(r"our$", "or", thing)  # colour = color
            attribute = f"favourite:{_FAVOURITE_KINDS.get(thing, thing)}"
            value = _value_words(span)
        elif attribute == "occupation":
            value = frozenset(
                _job(_fold(t))
                for t in _tokens(_cut(re.split(r"\s+(?:at|for|in|chez|à|au|pour)\s+", span)[0]))
                if _fold(t) not in _VALUE_STOP
            )
        else:
            value = _value_words(span)
        if not value:
            return None
        return Claim(holder, attribute, kind, value, shown=span)
    if kind == LEVEL:
        return _education(groups, holder, match)
    if kind == DATE:
        value = _date_parts(groups["v"])
        return Claim(holder, attribute, kind, value, shown=span) if value else None
    if kind == STATE:
        if match.groupdict().get("never") or match.groupdict().get("jamais"):
            return Claim(holder, attribute, kind, frozenset(["never_married"]), shown=match.group(0).strip())
        state = _MARITAL.get(_fold(match.group("v")))
        if state is None or re.search(r"\bnot\b", match.group(0), re.IGNORECASE):
            return None
        return Claim(holder, attribute, kind, frozenset([state]), shown=match.group("v"))
    if kind == COUNT:
        if groups.get("exists"):
            noun = _EXISTS[_fold(groups["exists"])]
            return Claim(holder, f"count:{noun}", kind, frozenset(["any"]), shown=match.group(0).strip())
        if groups.get("none"):  # "doesn't own a car"
            groups = {**groups, "v": "no"}
        if groups.get("v") is None and match.group(0)[:4].casefold() == "both":
            groups = {**groups, "v": "two"}
        noun = _COUNT_NOUNS.get(_fold(groups.get("n") or "children"))
        number = _fold(groups["v"])
        count = "some" if number in ("a", "an", "un", "une") else str(_NUMBER_WORDS.get(number, number))
        if "qu'" in match.group(0):  # n'a qu'un chien: exactly one
            count = "1"
        if noun is None or not (count == "some" or count.isdigit()):
            return None
        return Claim(holder, f"count:{noun}", kind, frozenset([count]), shown=match.group(0).strip())
    # POLAR
    positive = groups.get("pos") is not None
    if attribute == "allergy":
        head = _object_head(span)
        return Claim(
            holder, f"allergy:{head or 'any'}", POLAR, frozenset(), positive=positive, shown=match.group(0).strip()
        )
    if attribute == "condition":
        name = _CONDITIONS.get(_fold(groups["v"])) if groups.get("v") else "any"
        if name is None:
            return None
        return Claim(holder, f"condition:{name}", POLAR, frozenset(), positive=positive, shown=match.group(0).strip())
    if attribute == "diet" and groups.get("diet"):
        group = DIETS[_fold(groups["diet"]).split()[-1]][0]
        return Claim(holder, f"habit:eat:{group}", POLAR, frozenset(), positive=positive, shown=match.group(0).strip())
    if attribute == "diet":
        return Claim(holder, "habit:eat:meat", POLAR, frozenset(), positive=positive, shown=match.group(0).strip())
    head = _object_head(span)
    if attribute == "habit":
        verb = groups.get("verb")
        verb = _HABIT_VERBS.get(_fold(verb)) if verb else None
        if verb is None and (positive or _fold(groups["neg"]) in _PLAIN_NEGATIONS):
            return None
        if verb is None:  # "has given up coffee", "quit smoking", "a arrêté le café"
            word = _fold(_tokens(span)[0]) if _tokens(span) else ""
            if word in _HABIT_VERBS:
                verb, head = _HABIT_VERBS[word], _object_head(span[len(_tokens(span)[0]) :])
            else:
                verb = "*"
        if verb == "go" and _tokens(span) and _fold(_tokens(span)[0]) in _HABIT_VERBS:  # goes running
            verb, head = _HABIT_VERBS[_fold(_tokens(span)[0])], None
        if verb == "go" and re.search(r"\b(?:(?:à|en)\s+vélo|by\s+bike|on\s+(?:a|his|her|my)\s+bike)\b", span, re.I):
            verb, head = "cycle", None  # va au travail à vélo: the habit is cycling
        if head is not None and _fold(head) in _HABIT_VERBS:  # quit smoking, stopped running
            verb, head = _HABIT_VERBS[_fold(head)], None
        if verb in _INTRANSITIVE:
            head = None
        if head is None and verb in (
            "*",
            "play",
            "go",
            "use",
            "take",
            "read",
            "watch",
            "cook",
            "drink",
            "eat",
            "drive",
        ):
            return None
        if head in ("meat", "viande"):
            return Claim(holder, "habit:eat:meat", POLAR, frozenset(), positive=positive, shown=match.group(0).strip())
        return Claim(
            holder, f"habit:{head or verb}", POLAR, frozenset(), positive=positive, shown=match.group(0).strip()
        )
    if head is None:
        return None
    return Claim(holder, f"likes:{head}", POLAR, frozenset(), positive=positive, shown=match.group(0).strip())


_CONTACT_KINDS = {
    _fold(w): kind
    for kind, words in {
        "mobile": "mobile cell portable",
        "work": "work office pro professionnelle",
        "home": "home landline fixe",
        "personal": "personal perso personnelle",
    }.items()
    for w in words.split()
}


def _education(groups: dict, holder: str, match: re.Match) -> Claim | None:
    """The level of education a match says was reached: at least (a degree held, higher studies done), at most
    (never went to university), or exactly (the highest qualification)."""
    shown = match.group(0).strip()
    if groups.get("exact"):
        level = _DEGREES.get(_fold(groups["exact"]))
        value = frozenset([f"min:{level}", f"max:{level}"]) if level is not None else None
    elif groups.get("max"):
        value = frozenset(["max:0"])
    elif groups.get("attended"):
        value = frozenset(["min:1"])
    else:
        level = _DEGREES.get(_fold(groups.get("v") or ""))
        value = frozenset([f"min:{level}"]) if level else None  # a school diploma says nothing of what came after
    return Claim(holder, "education", LEVEL, value, shown=shown) if value else None
