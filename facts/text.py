"""Text rules of the memory store: normalisation for de-duplication, and the contradiction signals that,
together with a high cosine similarity, open a conflict set. No LLM: rules a curator can read and predict.
"""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from dataclasses import dataclass

from facts import claims as claim_reading

_SPACE_RE = re.compile(r"\s+")
_TRAILING_PUNCT_RE = re.compile(r"[\s.!?;:,…]+$")


def normalise_text(text: str) -> str:
    """Case, Unicode form, runs of whitespace and trailing punctuation folded: 'Paul  likes tea!' and
    'paul likes tea' are the same fact."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _SPACE_RE.sub(" ", text).strip()
    return _TRAILING_PUNCT_RE.sub("", text)


def text_hash(text: str) -> str:
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


# Words too common to carry information (English and French). Used to tell whether a new fact adds
# anything to a near-identical one, and by the assembler's lexical leg.
STOP_WORDS = frozenset(
    """a about after again all also am an and any are as at be been before being but by can could did do does
    doing done for from had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of on once only or other our out over own same she should so some such
    than that the their them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours tell know remember please
    still currently au aux avec ce ces cet cette dans de des du elle elles en est et eux il ils je la le les
    leur leurs lui ma mais me mes moi mon ne nos notre nous on ont ou où par pas pour qu que quel quelle quels
    quelles qui sa se ses son sont sur ta te tes toi ton tu un une vos votre vous été être avoir fait faire
    comment quand est-ce quoi y a as ai toujours maintenant actuellement""".split()
)
_CONTENT_RE = re.compile(r"\w+", re.UNICODE)


def _stem(word: str) -> str:
    # Crude on purpose: enough that "works" and "working" are one word when comparing two sentences.
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _CONTENT_RE.findall(text.casefold()) if len(w) > 1 and w not in STOP_WORDS}


def adds_information(new: str | Statement, old: str | Statement) -> bool:
    """Whether `new` names something `old` does not. A near-duplicate by cosine that adds a word
    ("allergic to cats" -> "allergic to cats and dogs") is a new fact, not a repeat: MiniLM puts such
    pairs at 0.97, above any sensible duplicate threshold."""
    return bool(analyse(new).content - analyse(old).content)


# --- contradiction signals ------------------------------------------------------------------------------

_WORD_RE = re.compile(r"[\w'’-]+", re.UNICODE)
_NEGATIONS = {
    # English
    "not",
    "no",
    "never",
    "none",
    "nobody",
    "nothing",
    "neither",
    "nor",
    "without",
    "cannot",
    "isn't",
    "aren't",
    "wasn't",
    "weren't",
    "don't",
    "doesn't",
    "didn't",
    "won't",
    "wouldn't",
    "can't",
    "couldn't",
    "shouldn't",
    "hasn't",
    "haven't",
    "hadn't",
    # French
    "ne",
    "pas",
    "jamais",
    "aucun",
    "aucune",
    "sans",  # "plus", "rien", "personne" also mean more/thing/person
}
_NUMBER_RE = re.compile(r"\d+(?:[.,:h]\d+)*")
_NUMBER_WORDS = {
    w: str(i)
    for i, words in enumerate(
        [
            ("zero", "zéro"),
            ("one", "un", "une"),
            ("two", "deux"),
            ("three", "trois"),
            ("four", "quatre"),
            ("five", "cinq"),
            ("six",),
            ("seven", "sept"),
            ("eight", "huit"),
            ("nine", "neuf"),
            ("ten", "dix"),
            ("eleven", "onze"),
            ("twelve", "douze"),
        ]
    )
    for w in words
}
_MONTHS = {
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "janvier",
    "février",
    "fevrier",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "aout",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
    "decembre",
}
_WEEKDAYS = {
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "lundi",
    "mardi",
    "mercredi",
    "jeudi",
    "vendredi",
    "samedi",
    "dimanche",
}
# Pairs of words that cannot both hold of the same thing. Small on purpose: each pair is a precision risk.
_ANTONYMS = {
    frozenset(p)
    for p in [
        ("likes", "dislikes"),
        ("loves", "hates"),
        ("like", "dislike"),
        ("love", "hate"),
        ("married", "divorced"),
        ("married", "single"),
        ("alive", "dead"),
        ("allowed", "forbidden"),
        ("aime", "déteste"),
        ("adore", "déteste"),
        ("marié", "divorcé"),
        ("mariée", "divorcée"),
        ("vivant", "mort"),
        ("autorisé", "interdit"),
    ]
}


@dataclass(frozen=True)
class Signal:
    rule: str  # different_value | reversed (facts.claims) | negation | different_number | different_date | different_name | antonym
    detail: str
    # What was read as contradicting, for the curator (facts.claims): {"attribute", "holder", "values": [new, old]}
    reading: dict | None = None

    @property
    def read_as_claims(self) -> bool:
        return self.reading is not None

    @property
    def structural(self) -> bool:
        """The rule says by itself that the two facts are about the same thing: their claims clash, or one is the
        other negated (_same_claim; tests/facts/test_contradiction_pairs.py holds LoCoMo's chats to it). The other
        word rules need the cosine to say it."""
        return self.read_as_claims or self.rule == "negation"


def _words(text: str) -> list[str]:
    return [w.strip("'’-") for w in _WORD_RE.findall(text) if w.strip("'’-")]


_SENTENCE_END_RE = re.compile(r"[.!?:;]\s*$")


def _sentence_starts(text: str) -> set[int]:
    """Indexes (into _words(text)) of the words that open a sentence or follow a colon: capitalised there
    by grammar ("Jon: Thanks!"), not because they are names."""
    starts, index, last_end = set(), 0, 0
    for match in _WORD_RE.finditer(text):
        if not match.group().strip("'’-"):
            continue
        if index == 0 or _SENTENCE_END_RE.search(text[last_end : match.start()]):
            starts.add(index)
        index += 1
        last_end = match.end()
    return starts


def _is_negation(word: str) -> bool:
    # contractions the tokeniser keeps whole (n't) and French elision (n'aime)
    return word in _NEGATIONS or word.endswith(("n't", "n’t")) or word.startswith(("n'", "n’"))


def _negated(words: list[str]) -> bool:
    return any(_is_negation(w.casefold()) for w in words)


# The second half of a negation that says something stopped ("no longer", "not ... anymore", "ne ... plus"): part of
# the negation in a negated statement, a content word nowhere else ("plus" is also "more").
_CESSATION = {"longer", "anymore", "plus"}


def _affirmed_content(words: list[str]) -> set[str]:
    """The content words of a statement with its negation taken out: "Clara does not speak Spanish" and
    "Clara speaks Spanish" both give {clara, speak, spanish}, "Marie n'aime pas le café" gives
    {marie, aime, café}. Auxiliaries ("does", "is") are stop words already."""
    negated = _negated(words)
    kept = []
    for word in words:
        folded = word.casefold()
        if folded.startswith(("n'", "n’")) and len(folded) > 2:  # n'aime: the verb stays, its negation goes
            folded = folded[2:]
        elif _is_negation(folded) or (negated and folded in _CESSATION):
            continue
        kept.append(folded)
    return content_words(" ".join(kept))


# A negation contradicts only the same claim: once the negation is taken out, the two statements must say
# the same thing, one of them at most this many content words longer ("Anna drinks coffee every morning" /
# "Anna never drinks coffee"). Without it, any negated sentence contradicted every similar one: on real chats
# (LoCoMo, 788 turns) 1,965 pairs of turns such as "Thanks, I won't give up!" / "Keep it up, you're almost
# there!" opened conflict sets (docs/quality.md).
NEGATION_MAX_EXTRA_WORDS = 2


def _same_claim(a: frozenset[str], b: frozenset[str]) -> bool:
    """One claim's content (_affirmed_content) inside the other's, the longer adding at most
    NEGATION_MAX_EXTRA_WORDS; a claim of one word only matches itself exactly ("Gina: ;)" says nothing that
    "Gina: Can't wait!" denies)."""
    if a == b:
        return bool(a)
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(small) >= 2 and small <= large and len(large - small) <= NEGATION_MAX_EXTRA_WORDS


# A leading bracketed stamp ("[9:38 pm on 16 June, 2023] Jon: ...") says when a statement was made, not what
# it says: two turns of a chat a month apart do not contradict each other by their dates.
_STAMP_RE = re.compile(r"^\s*\[[^\]\n]{1,80}\]\s*")


def _claim(text: str) -> str:
    return _STAMP_RE.sub("", text, count=1)


def leading_stamp(text: str) -> str:
    """The bracketed stamp a text opens with, as written ("[9:38 pm on 16 June, 2023]"), or "" when it has none."""
    match = _STAMP_RE.match(text)
    return match.group(0).strip() if match else ""


def _common_prefix(a: tuple, b: tuple) -> int:
    """Length of the longest common prefix, by halving: each step one tuple comparison at C speed, where a word
    by word loop in Python cost a millisecond for two near-identical texts of a thousand words."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _diff_spans(a: Statement, b: Statement) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
    """Where two statements' words start to differ (case aside), and their differing middles once the common
    prefix and suffix are removed."""
    fa, fb = a.folded, b.folded
    start = _common_prefix(fa, fb)
    end = _common_prefix(fa[start:][::-1], fb[start:][::-1])
    return start, a.words[start : len(fa) - end], b.words[start : len(fb) - end]


def _numbers(text: str, words: list[str]) -> set[str]:
    # "one"/"un"/"une" are articles far more often than counts: only two and up count as number words.
    spelled = {
        _NUMBER_WORDS[w.casefold()]
        for w in words
        if w.casefold() in _NUMBER_WORDS and _NUMBER_WORDS[w.casefold()] not in ("0", "1")
    }
    return set(_NUMBER_RE.findall(text)) | spelled


def _is_numeric(word: str) -> bool:
    folded = word.casefold()
    return any(ch.isdigit() for ch in word) or folded in _NUMBER_WORDS or folded in _MONTHS or folded in _WEEKDAYS


def _months(words: list[str]) -> set[str]:
    # "may" is a month only when written "May" inside a sentence; otherwise it is the modal verb.
    return {
        w.casefold()
        for i, w in enumerate(words)
        if w.casefold() in _MONTHS and (w.casefold() != "may" or (w == "May" and i > 0))
    }


def _is_name(word: str, position: int, sentence_starts: set[int]) -> bool:
    # A month or weekday is a date, not a name: "visited Rome in May" / "visited Paris in June" name two trips.
    return position not in sentence_starts and word[:1].isupper() and word[1:2].islower() and not _is_numeric(word)


@dataclass(frozen=True)
class Statement:
    """What the rules read of one text, worked out once: a batch compares each text with up to 16 others, and
    for texts of thousands of characters re-reading them for every pair was most of a batch's time."""

    words: tuple[str, ...]  # _words of the claim (the text without its leading stamp)
    folded: tuple[str, ...]  # the same, casefolded
    lower: frozenset[str]  # the words casefolded
    negated: bool
    affirmed: frozenset[str]  # _affirmed_content(words)
    numbers: frozenset[str]
    months: frozenset[str]
    days: frozenset[str]
    sentence_starts: frozenset[int]
    content: frozenset[str]  # content_words of the whole text (adds_information)
    claims: tuple  # facts.claims.read: who, which attribute, which value


def analyse(text: str | Statement) -> Statement:
    if isinstance(text, Statement):
        return text
    claim = _claim(text)
    # Interned: the words of a batch's similar texts are mostly the same words, held once.
    words = tuple(sys.intern(w) for w in _words(claim))
    folded = tuple(sys.intern(w.casefold()) for w in words)
    lower = frozenset(folded)
    return Statement(
        words=words,
        folded=folded,
        lower=lower,
        negated=_negated(words),
        affirmed=frozenset(_affirmed_content(words)),
        numbers=frozenset(_numbers(claim, words)),
        months=frozenset(_months(words)),
        days=lower & _WEEKDAYS,
        sentence_starts=frozenset(_sentence_starts(claim)),
        content=frozenset(content_words(text)),
        claims=claim_reading.read(text),
    )


def contradiction_signal(a: str | Statement, b: str | Statement) -> Signal | None:
    """A rule-based reason to believe `a` (the newer) and `b` cannot both be true, or None. First the claims
    (facts.claims: one holder, one attribute, two values), which say by themselves that two facts are about the
    same thing; then the word rules, meaningful only for two sentences already known to be about the same thing
    (high cosine similarity). Takes texts, or their analyse() when the caller compares one text with several."""
    sa, sb = analyse(a), analyse(b)
    clash = claim_reading.contradiction(sa.claims, sb.claims)
    if clash is not None:
        return Signal(
            clash.rule,
            clash.detail,
            reading={"attribute": clash.attribute, "holder": clash.holder, "values": [clash.new, clash.old]},
        )
    if sa.negated != sb.negated and _same_claim(sa.affirmed, sb.affirmed):
        return Signal("negation", "the same statement, negated in one and not in the other")

    lower_a, lower_b = sa.lower, sb.lower
    for pair in _ANTONYMS:
        x, y = tuple(pair)
        if (x in lower_a and y in lower_b) or (y in lower_a and x in lower_b):
            return Signal("antonym", f"'{x}' against '{y}'")

    # Numbers and dates count only in the same slot: once the common beginning and end are set aside, what
    # differs must be the numbers or dates themselves. "Hannah's car is registered YK19 ZRT" and "Owen's van
    # is registered YK21 ZTR" differ in far more than a number: two facts about two vehicles.
    start, span_a, span_b = _diff_spans(sa, sb)
    same_slot = [w.casefold() for w in span_a if not _is_numeric(w)] == [
        w.casefold() for w in span_b if not _is_numeric(w)
    ]
    if same_slot:
        na, nb = sa.numbers, sb.numbers
        months_a, months_b = sa.months, sb.months
        days_a, days_b = sa.days, sb.days
        if (months_a and months_b and months_a != months_b) or (days_a and days_b and days_a != days_b):
            return Signal("different_date", f"{sorted(months_a | days_a)} against {sorted(months_b | days_b)}")
        if na and nb and na != nb:
            rule = "different_date" if (months_a or months_b) else "different_number"
            return Signal(rule, f"{sorted(na)} against {sorted(nb)}")

    if span_a and span_b and len(span_a) <= 4 and len(span_b) <= 4:
        starts_a, starts_b = sa.sentence_starts, sb.sentence_starts
        names_a = {w.casefold() for i, w in enumerate(span_a) if _is_name(w, start + i, starts_a)}
        names_b = {w.casefold() for i, w in enumerate(span_b) if _is_name(w, start + i, starts_b)}
        # Same slot: around the names the two spans say the same thing ("in X" / "in Y", not "in X" /
        # "at the Y"), and neither name appears anywhere in the other sentence (a reordering is no conflict).
        rest_a = [w.casefold() for w in span_a if w.casefold() not in names_a]
        rest_b = [w.casefold() for w in span_b if w.casefold() not in names_b]
        if (
            names_a
            and names_b
            and names_a != names_b
            and rest_a == rest_b
            and not (names_a & lower_b)
            and not (names_b & lower_a)
        ):
            return Signal("different_name", f"{' '.join(sorted(names_a))} against {' '.join(sorted(names_b))}")
    return None
