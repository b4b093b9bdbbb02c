"""A structured reading of a fact: who it is about, which attribute, which value. Two facts that give one holder
two values of an attribute that holds one value at a time (where someone lives, works, their age, birth date,
partner, number of children, a preference or habit and its reverse) cannot both be true now, however they are
worded: "Bob lives in Berlin, in Kreuzberg." / "Bob moved to Munich." is a contradiction at cosine 0.77 that
the word-level rules of facts.text, which need the same sentence with one slot changed, never see.

Rules, English and French, that a curator can read and predict; no model. A sentence the patterns do not
recognise gives no claim and so no contradiction: precision first, a missed pair is left to the word rules.
"""
from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from dataclasses import dataclass

# --- words -----------------------------------------------------------------------------------------------

_APOSTROPHES = str.maketrans({"’": "'", "`": "'", "ʼ": "'"})
_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|\n+")
_STAMP_RE = re.compile(r"^\s*\[[^\]\n]{1,80}\]\s*")
_SPEAKER_RE = re.compile(r"^\s*([A-Z][\w-]{1,30}):\s+")
_TOKEN_RE = re.compile(r"[\w'-]+", re.UNICODE)


def _fold(word: str) -> str:
    """Case and accents folded: 'Munich' = 'munich', 'végétarienne' ~ 'vegetarienne'."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


# Capitalised words that open a sentence without being a name.
_NOT_NAMES = {_fold(w) for w in """
    i i'm i've i'd i'll j me my mine we our us you your he him his she her hers they them their it its this that
    these those there here the a an and but or so then now currently recently still also just yesterday today
    last next since after before when while as at in on for from with by of to user user's subject member
    client customer person patient according apparently actually meanwhile anyway well oh yes no hey hi hello
    thanks thank sure wow great good nice okay ok lol haha
    je j' j'ai il elle ils elles on nous vous tu le la les l' un une des du de mon ma mes ton ta tes son sa ses
    notre nos votre vos leur leurs ce cette ces cet et mais ou donc puis maintenant actuellement depuis hier
    aujourd'hui desormais dorenavant utilisateur utilisatrice l'utilisateur l'utilisatrice d'apres selon oui non
    merci bonjour salut
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december lundi mardi mercredi jeudi vendredi samedi dimanche janvier
    fevrier mars avril mai juin juillet aout septembre octobre novembre decembre
""".split()}

_SELF_WORDS = {"i", "i'm", "im", "me", "je", "j'", "j", "user", "subject", "utilisateur", "utilisatrice",
               "l'utilisateur", "l'utilisatrice", "he", "she", "il", "elle", "they"}
_FIRST_PERSON = {"i", "i'm", "im", "i've", "i'd", "i'll", "je", "j'", "j", "my", "mon", "ma", "mes", "we", "we're",
                 "we've", "our", "on", "nous", "notre", "nos"}
# Who a third-person pronoun with no name before it stands for: the scope's subject, named or not ("Priya
# lives in Leeds." / "She moved to Bristol."), so it matches a name or the subject (same_holder).
ANYONE = "~"

_RELATIONS = {_fold(w): _fold(canonical) for canonical, words in {
    "daughter": "daughter fille", "son": "son fils", "wife": "wife femme epouse", "husband": "husband mari epoux",
    "sister": "sister soeur sœur", "brother": "brother frere", "mother": "mother mom mum mere maman",
    "father": "father dad pere papa", "partner": "partner compagne compagnon conjoint conjointe",
    "girlfriend": "girlfriend copine", "boyfriend": "boyfriend copain", "friend": "friend ami amie",
    "boss": "boss manager patron patronne cheffe chef", "cousin": "cousin cousine", "uncle": "uncle oncle",
    "aunt": "aunt tante", "grandmother": "grandmother grandma grand-mere mamie",
    "grandfather": "grandfather grandpa grand-pere papi", "colleague": "colleague coworker collegue",
    "child": "child kid enfant", "parent": "parents parent", "neighbour": "neighbour neighbor voisin voisine", "roommate": "roommate colocataire",
    "fiance": "fiance fiancee", "niece": "niece", "nephew": "nephew neveu", "baby": "baby bebe",
}.items() for w in words.split()}

_CUT_WORDS = {_fold(w) for w in """
    with since for because where who which while and but as when until after before avec depuis pour car parce
    ou qui que quand mais et jusqu'a apres avant pendant during
""".split()}
_VALUE_STOP = {_fold(w) for w in """
    a an the in at to of on for my his her their our your its now currently still again back recently just
    already finally today this last next year years month months week weeks ago new old same
    le la les l' un une des du de d' a au aux en dans chez sur son sa ses mon ma mes leur leurs notre votre
    maintenant desormais actuellement toujours encore recemment depuis cette ce annee ans mois semaine
    city town country company firm place there here home it them this that ça cela ceci lui eux you me us him
    january february march april may june july august september october november december janvier fevrier
    avril mai juin juillet aout septembre octobre novembre decembre
""".split()}


def _spans(text: str):
    """The words of `text` (apostrophes and hyphens trimmed), each with where it starts and ends."""
    for found in _TOKEN_RE.finditer(text):
        token = found.group().strip("'-")
        if token:
            yield token, found.start(), found.end()


def _tokens(text: str) -> list[str]:
    return [token for token, _, _ in _spans(text)]


def _each_name(tokens, first_at_start: bool):
    """Capitalised words that are not sentence openers or function words: the proper names of a span, in order."""
    for i, token in enumerate(tokens):
        if not token[:1].isupper():
            continue
        folded = _fold(token)
        base = folded[:-2] if folded.endswith("'s") else folded
        if base in _NOT_NAMES or base in _RELATIONS:
            continue
        if i == 0 and first_at_start and base in _VALUE_STOP:
            continue
        yield base


def _names(tokens: list[str], first_at_start: bool) -> list[str]:
    return list(_each_name(tokens, first_at_start))


def _first_name(text: str) -> str | None:
    """The first name of `text`, read no further: a pronoun's context is every sentence before it, so reading all
    of it for each predicate made a long fact's reading grow with its length squared."""
    return next(_each_name((token for token, _, _ in _spans(text)), first_at_start=True), None)


# --- claims ----------------------------------------------------------------------------------------------

SINGLE, POLAR, COUNT, STATE, DATE = "single", "polar", "count", "state", "date"


@dataclass(frozen=True)
class Claim:
    holder: str  # "bob", "self", "bob/daughter", "self/wife"
    attribute: str  # "residence", "employer", "likes:coffee", "count:children", ...
    kind: str  # SINGLE: one value at a time; POLAR: a yes or a no; COUNT; STATE (marital); DATE (birth)
    value: frozenset  # folded words, numbers, or date parts ("y:2019", "m:5", "d:3")
    positive: bool = True
    shown: str = ""  # the value as written, for the curator

    @property
    def key(self) -> tuple[str, str]:
        return (self.holder, self.attribute)


def same_holder(a: str, b: str) -> bool:
    """Whether two holders can be one person: equal, or a pronoun's (ANYONE) and a name or the subject, also as
    the owner of a relation ("~/wife" and "antoine/wife")."""
    if a == b:
        return True
    owner_a, _, rest_a = a.partition("/")
    owner_b, _, rest_b = b.partition("/")
    if rest_a != rest_b or ANYONE not in (owner_a, owner_b):
        return False
    other = owner_b if owner_a == ANYONE else owner_a
    return other != "other" and not other.startswith("thing:")


@dataclass(frozen=True)
class Clash:
    """Why two claims cannot both hold: the attribute, whose it is, and the two values as written."""

    attribute: str
    holder: str
    new: str
    old: str
    rule: str  # different_value: two values of one attribute; reversed: a yes and a no

    @property
    def detail(self) -> str:
        return f"{self.attribute} of {self.holder}: {self.new!r} against {self.old!r}"


_MARITAL_CLASH = {frozenset(p) for p in [
    ("married", "single"), ("married", "divorced"), ("married", "widowed"), ("single", "engaged"),
    ("single", "in_relationship"), ("divorced", "engaged"), ("single", "pacsed"), ("married", "separated"),
    ("never_married", "married"), ("never_married", "divorced"), ("never_married", "widowed"),
    ("never_married", "separated"),
]}


def clash(new: Claim, old: Claim) -> Clash | None:
    """The two claims' disagreement, or None when both can hold: another holder or attribute, one value inside
    the other (more specific), the same value, additive attributes, or a past state."""
    if new.attribute != old.attribute or new.kind != old.kind or not same_holder(new.holder, old.holder):
        return None
    found = False
    if new.kind == SINGLE:
        found = bool(new.value) and bool(old.value) and not (new.value & old.value)
    elif new.kind == POLAR:
        found = new.positive != old.positive
    elif new.kind == COUNT:
        a, b = _count(new.value), _count(old.value)
        if "any" in new.value | old.value:  # "has a dog" says there are pets, not how many
            found = a is not None and b is not None and (a == 0) != (b == 0)
        else:
            found = a is not None and b is not None and a != b
    elif new.kind == STATE:
        found = any(frozenset((x, y)) in _MARITAL_CLASH for x in new.value for y in old.value)
    elif new.kind == DATE:
        parts_new = {p[0]: p for p in new.value}
        parts_old = {p[0]: p for p in old.value}
        found = any(parts_new[k] != parts_old[k] for k in parts_new.keys() & parts_old.keys())
    if not found:
        return None
    holder = old.holder if new.holder.startswith(ANYONE) else new.holder
    return Clash(attribute=new.attribute, holder=holder, new=new.shown, old=old.shown,
                 rule="reversed" if new.kind == POLAR else "different_value")


_NUMBER_NAMES = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())} | {w: i for i, w in enumerate(
    "zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze seize".split())} | {"vingt": 20}


def _number(word: str) -> int | None:
    word = word.casefold()
    return int(word) if word.isdigit() else _NUMBER_NAMES.get(word)


def _count(value: frozenset) -> int | None:
    for v in value:
        if v in ("some", "any"):  # "a dog" is one dog
            return 1
        if v.isdigit():
            return int(v)
    return None


def contradiction(new_claims: tuple[Claim, ...], old_claims: tuple[Claim, ...]) -> Clash | None:
    """The first pair of claims, one of each fact, that cannot both hold."""
    if not new_claims or not old_claims:
        return None
    by_attribute = {}
    for claim in old_claims:
        by_attribute.setdefault(claim.attribute, []).append(claim)
    for claim in new_claims:
        for other in by_attribute.get(claim.attribute, ()):
            found = clash(claim, other)
            if found is not None:
                return found
    return None


# --- the holder: who a clause is about ------------------------------------------------------------------

_CLAUSE_APPOSITIVE_RE = re.compile(r"^\s*((?-i:[A-Z])[\w'-]+)\s*,[^,]{1,60},\s*$")
_APPOSITIVE_RE = re.compile(r"^\s*([A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+)?\s*,")


_PRONOUNS = {"he", "she", "il", "elle", "they", "ils", "elles", "him", "her"}
_POSSESSIVES = {"his", "her", "their", "son", "sa", "ses", "leur", "leurs"}
_IGNORED = None  # filled below: words of a subject phrase that name nobody (adverbs, auxiliaries, articles)


def _last_name(text: str) -> str | None:
    """The first word of the last run of names in `text`: "... is Mei Lin, " -> mei."""
    last, previous_end = None, None
    for token, start, end in _spans(text):
        base = _fold(token)
        base = base[:-2] if base.endswith("'s") else base
        if not token[:1].isupper() or base in _NOT_NAMES or base in _RELATIONS:
            previous_end = None
            continue
        if previous_end is None or text[previous_end:start].strip():
            last = base
        previous_end = end
    return last


def _holder(prefix: str, speaker: str | None, sentence_holder: str | None, context: str = "") -> str:
    """Who the words before a predicate name, read from the last word that can head a subject: a name ("Bob",
    "Mia, Bob's daughter,", "Bob's daughter Mia" -> mia), a relation of a name or of the subject ("Bob's wife" ->
    bob/wife, "la fille de Bob" -> bob/daughter, "my sister" -> self/sister), a thing ("the company" ->
    thing:company), the subject itself (I, the user, he or she, or no subject at all), or the sentence's first
    holder for a second verb ("Bob lives in Berlin and works at Google"). A third-person pronoun ("he", "his",
    "il", "sa") stands for the first name of `context`, the sentence before the predicate, when it has one."""
    me = _fold(speaker) if speaker else "self"
    appositive = _APPOSITIVE_RE.match(prefix)
    if appositive and _fold(appositive.group(1)) not in _NOT_NAMES:
        return _fold(appositive.group(1))
    relative = re.search(r"\b(?:who|which|qui)\s*(?:(?:now|still|also|currently|just|maintenant|désormais|aussi|toujours)\s+)*$",
                         prefix, re.IGNORECASE)
    if relative:  # "Mei, who now lives": the name just before the relative pronoun
        named = _last_name(context[: len(context) - len(prefix)] + prefix[: relative.start()])
        if named:
            return named
    heads: list[tuple[str, str]] = []  # (kind, word): name | relation | me | pronoun | thing
    previous_end = None  # where the previous token ended, when it was a name
    for token, start, end in _spans(prefix):
        if (previous_end is not None and not prefix[previous_end:start].strip() and token[:1].isupper()
                and _fold(token) not in _NOT_NAMES):
            previous_end = end
            continue  # "Priya Raman": the first name is the one a later fact uses
        previous_end = None
        token = token[2:] if token[:2].casefold() in ("d'", "l'") and len(token) > 2 else token  # d'Emma
        folded = _fold(token)
        base = folded[:-2] if folded.endswith("'s") else folded
        base = base[2:] if base.startswith(("l'", "d'")) and len(base) > 2 else base
        if base in _RELATIONS:
            heads.append(("relation", _RELATIONS[base]))
        elif token[:1].isupper() and base not in _NOT_NAMES and not base.isdigit():
            heads.append(("name", base))
            previous_end = None if folded.endswith("'s") else end
        elif base in _FIRST_PERSON or base in ("user", "subject", "utilisateur", "utilisatrice"):
            heads.append(("me", base))
        elif base in _PRONOUNS or base in _POSSESSIVES:
            heads.append(("pronoun", base))
        elif base in ("de", "d", "of"):
            heads.append(("of", base))
        elif base not in _IGNORED and not base.isdigit() and len(base) > 1:
            heads.append(("thing", base))
    heads = [h for h in heads if h[0] != "of" or heads.index(h) > 0]
    if not heads or all(kind == "of" for kind, _ in heads):
        opening = [_fold(token) for token, _, _ in itertools.islice(_spans(context), 2)]
        if any(w in _FIRST_PERSON or w in ("user", "utilisateur", "utilisatrice", "l'utilisateur", "l'utilisatrice")
               for w in opening):
            return sentence_holder or me  # the sentence is about the subject, whatever names come after
        return sentence_holder or _first_name(context) or me  # "Grace left Deloitte and is now at KPMG"
    kind, word = heads[-1]
    owner = next((w for k, w in reversed(heads[:-1]) if k in ("name", "me", "pronoun")), None)
    if owner in _PRONOUNS or owner in _POSSESSIVES:  # "his wife", "sa femme": the subject's, or a name's before
        owner = _first_name(context) or (ANYONE if speaker is None else "other")
    owner = me if owner in _FIRST_PERSON or owner in ("user", "subject", "utilisateur", "utilisatrice") else owner
    if kind in ("name", "me") and len(heads) >= 3 and heads[-2][0] == "of" and heads[-3][0] == "relation":
        return f"{word if kind == 'name' else me}/{heads[-3][1]}"  # la fille de Bob, la mère de l'utilisateur
    if kind == "name":
        return word
    if kind == "relation":
        return f"{owner or me}/{word}"
    if kind == "thing":
        return f"thing:{owner + '/' if owner else ''}{word}"
    if kind == "pronoun":
        return _first_name(context) or ("other" if speaker is not None else ANYONE)
    return me


# --- predicates ----------------------------------------------------------------------------------------
# Each a regular expression over one sentence (apostrophes made straight). The holder is read from the words
# before the match; `v` is the value's span, cut at the first clause word (with, since, and, ...).

_ADV = r"(?:(?:now|currently|still|also|recently|just|actually|finally|officially|already|full-time|part-time|maintenant|actuellement|désormais|toujours|aussi|récemment|enfin)\s+)*"
# "'s" is "is" only before what a verb takes ("she's a nurse", "he's based in"): "Paul's pilot licence" and
# "Isabel's editor" are possessives.
_BE = (r"(?:is|are|am|'re|'m|'s(?=\s+(?:an?|now|still|currently|also|just|recently|no|not|based|settled|living|"
       r"staying|married|single|divorced|engaged|dating|seeing|with|originally|employed|hired|working|allergic|"
       r"\d)\b))")

_PATTERNS: list[tuple[str, str, re.Pattern]] = []  # (attribute, kind, pattern)


def _p(attribute: str, kind: str, pattern: str) -> None:
    _PATTERNS.append((attribute, kind, re.compile(pattern, re.IGNORECASE)))


_V = r"(?P<v>[^.;!?\n]{1,80})"
# residence: a current state (lives, is based, has moved to); "used to live", "lived" are the past
_p("residence", SINGLE, rf"\b(?<!used to )(?:lives|live|living|resides|reside|residing|{_BE}\s+{_ADV}(?:based|settled|living|staying)|(?:has|have|'s|'ve|just)?\s*(?:moved|relocated)(?:\s+back)?)\s+{_ADV}(?:in|to|at|near)\s+{_V}")
_p("residence", SINGLE, r"\b(?:rents|owns|has bought|bought|shares|loue|possède|a acheté)\s+(?:an?|un|une|the|la|le)\s+(?:small\s+|big\s+|tiny\s+|new\s+|petit\s+|grand\s+)?(?:apartment|flat|house|studio|place|home|room|appartement|maison|studio|logement)\b(?P<v>[^.;!?\n]{1,80})")
_p("residence", SINGLE, rf"\b(?:home|hometown)\s+is\s+(?:now\s+)?(?:in\s+)?{_V}")
_p("residence", SINGLE, rf"\b(?:calls)\s+{_V}\s+home\b")
_p("residence", SINGLE, rf"\b(?:habite|habitent|habites|vit|vis|vivent|réside|résident|reside|est installée?|s'est installée?|est basée?|a déménagé|ont déménagé|déménagé|vient de déménager|s'est établie?)\s+{_ADV}(?:à|a|au|aux|en|dans|près de|sur)\s+{_V}")
# employer
_p("employer", SINGLE, rf"\b(?:works|work|working|{_BE}\s+{_ADV}working)\s+{_ADV}(?:at|for)\s+(?P<v>(?!home\b|free\b|night\b|a living\b)[^.;!?\n]{{1,80}})")
_p("employer", SINGLE, rf"\b(?:{_BE}\s+{_ADV}(?:employed|hired)\s+(?:by|at)|(?:has|have|'s|'ve|just)?\s*(?:joined|been hired by|started (?:a (?:new )?job|working) at|signed with))\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,60}})")
_p("employer", SINGLE, rf"\b(?:{_BE}\s+{_ADV}an?|works as(?:\s+an?)?)\s+[\w -]{{2,40}}?\s+(?:at|for|with)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,60}})")
_p("employer", SINGLE, rf"\b(?:est|suis|sont|travaille comme)\s+{_ADV}(?:[\w'-]+\s+){{1,3}}?(?:chez|pour)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,60}})")
_p("employer", SINGLE, r"\b(?:has been|'s been|is now|'s now|is still)\s+(?:with|at)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{0,60})")
_p("employer", SINGLE, r"\b(?:(?:has|have|'s|'ve)\s+been\s+(?:employed|hired|working)\s+(?:by|at|for)|started\s+(?:a\s+(?:new\s+)?job\s+)?(?:at|with)|(?:employer|workplace)\s+is\s+(?:now\s+)?|(?:employeur|boîte)\s+(?:est|c'est)\s+(?:maintenant\s+|désormais\s+)?|(?:ai|a|ont|as)\s+commencé\s+(?:à\s+(?:travailler|bosser)\s+)?chez)\s*(?P<v>(?-i:[A-Z])[^.;!?\n]{0,60})")
_p("employer", SINGLE, rf"\b(?:travaille|travaillent|travailles|bosse)\s+{_ADV}(?:chez|pour|à la|au sein de|dans l'entreprise)\s+{_V}")
_p("employer", SINGLE, rf"\b(?:est|sont)\s+{_ADV}(?:employée?s?|salariée?s?|embauchée?s?|recrutée?s?)\s+(?:par|chez|à|au|de|d')\s*{_V}")
_p("employer", SINGLE, rf"\b(?:a|ont|vient de)\s+{_ADV}(?:rejoint|rejoindre|intégré|intégrer)\s+(?:l'équipe de\s+|la société\s+|l'entreprise\s+)?(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,60}})")
# age
_AGE = (r"(?:\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
        r"sixteen|seventeen|eighteen|nineteen|twenty|un|deux|trois|quatre|cinq|six|sept|huit|neuf|dix|onze|douze|"
        r"treize|quatorze|quinze|seize|vingt)")
_p("age", SINGLE, rf"\b{_BE}\s+{_ADV}(?:now\s+)?(?P<v>{_AGE})(?:\s+years?\s+old|\s+yo\b|\s*(?=[.;!?,]|$))")
_p("age", SINGLE, rf"\b(?:turned|is turning|turning|just turned|aged|age is|age:)\s+(?P<v>{_AGE})\b")
_p("age", SINGLE, r"\b(?:celebrated|celebrating|is celebrating)\s+(?:my|his|her|their)\s+(?P<v>\d{1,3})(?:st|nd|rd|th)\s+birthday")
_p("age", SINGLE, rf"\b(?:a|ai|as|avons|ont|vient d'avoir|a eu|fête ses|a fêté ses|fêté mes|vient de fêter ses)\s+{_ADV}(?P<v>{_AGE})\s+ans\b")
_p("age", SINGLE, r"\b(?:soufflé|souffler|soufflera)\s+(?:ses|mes|leurs)\s+(?P<v>\d{1,3})\s+bougies")
_p("age", SINGLE, r"\bâgée?\s+de\s+(?P<v>\d{1,3})\s+ans\b")
# birth
_p("birth", DATE, r"\b(?:was|were|is|'s)?\s*born\s+(?:on|in)\s+(?P<v>[^.;!?\n]{1,40})")
_p("birth", DATE, r"\b(?<!wedding )(?:birthday|birth date|date of birth|d\.o\.b\.?)\s+(?:is\s+)?(?:on\s+)?(?P<v>[^.;!?\n]{1,40})")
_p("birth", DATE, r"\b(?:(?:est|suis|sont)\s+)?(?:née?s?)\s+(?:le|en)\s+(?P<v>[^.;!?\n]{1,40})")
_p("birth", DATE, r"\b(?:anniversaire(?!\s+de\s+mariage)|date de naissance)(?P<h>\s+(?:de|d')\s*[\w' -]{1,40}?)?\s+(?:est|tombe)\s+(?:le\s+|en\s+)?(?P<v>[^.;!?\n]{1,40})")
_p("birthplace", SINGLE, r"\b(?:was|were|is|'s)?\s*born\s+(?:and raised\s+)?in\s+(?P<v>(?!\d)[^.;!?\n\d]{1,60})")
_p("birthplace", SINGLE, r"\b(?:(?:est|suis|sont)\s+)?(?:née?s?|originaire)\s+(?:à|a|au|en|de|d')\s*(?P<v>(?!\d)[^.;!?\n\d]{1,60})")
_p("birthplace", SINGLE, r"\b(?:birthplace|place of birth|lieu de naissance)\s+(?:is|est)\s+(?P<v>(?-i:[A-Z])[^.;!?\n\d]{0,60})")
_p("birthplace", SINGLE, rf"\b(?:{_BE}\s+originally from|(?:comes|come) from)\s+(?P<v>(?-i:[A-Z])[^.;!?\n\d]{{0,60}})")
# partner and marital state
_p("partner", SINGLE, rf"\b(?:{_BE}\s+{_ADV}(?:married|engaged|wed)\s+to|{_BE}\s+{_ADV}(?:dating|seeing|with)|(?:has|have)\s+(?:been\s+)?(?:married|dating))\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,40}})")
_p("partner", SINGLE, r"\b(?:wife|husband|partner|spouse|girlfriend|boyfriend|fiancée?)(?:'s name)?(?:\s*,|\s+is called|\s+is named|\s+named|\s+is|(?=\s))\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{0,40})")
_p("partner", SINGLE, rf"\b(?:{_BE}\s+{_ADV}(?:dating|seeing|engaged to|married to|in a relationship with)|(?:has|have) a (?:girlfriend|boyfriend|partner))\s+(?:someone\s+|a (?:man|woman|guy|girl)\s+)?(?:named|called)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,40}})")
_p("partner", SINGLE, rf"\b(?:sort|sors|sortent)\s+{_ADV}avec\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,40}})")
_p("partner", SINGLE, rf"\b(?:est|sont|suis)\s+{_ADV}(?:mariée?|fiancée?|en couple|pacsée?)\s+(?:à|a|avec)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,40}})")
_p("partner", SINGLE, r"\b(?:femme|mari|épouse|époux|compagne|compagnon|copine|copain|conjointe?)(?P<h>\s+(?:de|d')\s*[\w' -]{1,40}?)?(?:\s*,|\s+s'appelle|\s+est)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{0,40})")
_p("marital", STATE, rf"\b{_BE}\s+{_ADV}(?:not\s+)?(?P<v>married|single|divorced|widowed|engaged|separated|in a relationship)\b")
_p("marital", STATE, rf"\b(?:est|suis|sont)\s+{_ADV}(?P<v>mariée?|célibataire|divorcée?|veuf|veuve|fiancée?|séparée?|pacsée?|en couple)\b")
_p("marital", STATE, rf"\b(?:{_BE}\s+(?:an?\s+)?(?P<v>widower|widow)|(?:has|have)\s+never\s+(?:been\s+)?(?P<never>married)|ne s'est jamais (?P<jamais>mariée?))\b")
_p("marital", STATE, r"\b(?:got|has got|have got|just got|recently got)\s+(?P<v>married|divorced|engaged)\b")
_p("marital", STATE, r"\b(?<!not )(?<!never )(?:(?:has|have|a|ai|ont)\s+)?(?P<v>married|épousée?)\s+(?=(?-i:[A-Z]))")
_p("partner", SINGLE, r"\b(?<!not )(?<!never )(?<!is )(?<!was )(?<!got )(?:(?:has|have|a|ai|ont)\s+)?(?:married|épousée?)\s+(?P<v>(?-i:[A-Z])[\w-]+)")
_p("marital", STATE, r"\b(?:my|our|mon|ma|notre)\s+(?P<v>husband|wife|mari|femme|épouse|époux)\b(?!\s*'s)(?<!ex-husband)")
# counts: children, kids, sons, daughters, pets, dogs, cats
_NUMBER = r"(?:un seul|une seule|a single|only one|just one|no|zero|one|two|three|four|five|six|seven|eight|nine|ten|a|an|\d{1,2}|aucun|aucune|pas d'|pas de|un|une|deux|trois|quatre|cinq|six|sept|huit|neuf|dix)"
_COUNTED = (r"(?:children|child|kids|kid|sons|son|daughters|daughter|boys|girls|garçons|grandchildren|pets|pet|dogs|dog|cats|cat|siblings|"
            r"brothers|sisters|goldfish|fish|horses|horse|rabbits|rabbit|hamsters|hamster|birds|bird|chickens|cars|car|"
            r"enfants|enfant|fils|filles|fille|petits-enfants|animaux|animal|chiens|chien|chats|chat|frères|sœurs|soeurs|"
            r"poissons|poisson|chevaux|cheval|lapins|lapin|oiseaux|oiseau|poules|voitures|voiture)")
_p("count", COUNT, rf"\b(?:my|his|her|their|our|mes|ses|leurs|nos)\s+(?P<v>two|three|four|five|six|seven|eight|nine|ten|\d{{1,2}}|deux|trois|quatre|cinq|six|sept|huit|neuf|dix)\s+(?P<n>{_COUNTED})\b")
_p("count", COUNT, rf"\b(?:n'a|n'ai|n'ont)\s+qu'(?P<v>un|une)\s+(?P<n>{_COUNTED})\b")
_p("count", COUNT, rf"\b(?:has|have|'s got|'ve got|has got|have got|now has|keeps|keep|owns|own|adopted|has adopted|just adopted|a adopté|ai adopté)\s+(?P<v>{_NUMBER})\s+(?:(?:young|little|grown|adult|small|lovely|beautiful|wonderful)\s+)?(?P<n>{_COUNTED})\b")
_p("count", COUNT, rf"\b(?:doesn't have|does not have|don't have|do not have|has never had|never had)\s+(?P<v>any)\s+(?P<n>{_COUNTED})\b")
_p("count", COUNT, r"\b(?:doesn't|does not|don't|do not)\s+(?:own|have)\s+(?P<none>a|an)\s+(?P<n>car|dog|cat|pet)\b")
_p("count", COUNT, rf"\b(?:a|ai|as|avons|ont)\s+(?P<v>{_NUMBER})\s*(?P<n>{_COUNTED})\b")
_p("count", COUNT, rf"\b(?:n'a|n'ai|n'ont)\s+(?P<v>pas|aucun|plus|jamais eu)\s+(?:d'|de\s+|d')?(?P<n>{_COUNTED})\b")
_p("count", COUNT, rf"\b(?:no longer has|no longer have|doesn't have|don't have)\s+(?P<v>any)\s+(?P<n>{_COUNTED})\s+(?:any\s*more|now)\b")
_p("count", COUNT, rf"\b(?:all|both)\s+(?P<v>{_NUMBER})?\s*(?:of\s+)?(?P<h>(?-i:[A-Z])[\w-]*'s|my|his|her|their|our)\s+(?P<n>{_COUNTED})\b")
_p("count", COUNT, r"\b(?:le|la|les)\s+(?P<exists>fils|fille|filles|enfants|enfant|chien|chienne|chat|chatte)\s+(?P<h>(?:de|d')\s*(?:l'utilisateur|l'utilisatrice|(?-i:[A-Z])[\w-]+))")
_p("count", COUNT, r"\b(?P<h>(?:the\s+)?user's)\s+(?P<exists>son|daughter|kids|children|child|dog|cat)\b")
# "my son", "sa fille", "Diego walks his dog": there are children, or pets
_p("count", COUNT, r"\b(?P<h>my|his|her|their|our|mon|ma|mes|son|sa|ses|notre|nos|leur|leurs|(?-i:[A-Z])[\w-]*'s)\s+(?:(?:eldest|oldest|youngest|little|baby|older|younger|new|aînée?|cadette?|petite?|grande?|plus jeune|benjamine?)\s+)?(?P<exists>son|daughter|kids|children|child|fils|fille|enfants|enfant|dog|cat|puppy|kitten|chien|chienne|chat|chatte|chiot)\b")
_p("count", COUNT, rf"\b(?:father|mother|dad|mom|mum|parent|père|mère|papa|maman)\s+(?:of|de)\s+(?P<v>{_NUMBER})(?:\s+(?P<n>{_COUNTED}))?\b")
# occupation
_p("occupation", SINGLE, r"\b(?:works|work|working)\s+(?:full-time\s+|part-time\s+|full time\s+|part time\s+)?as\s+(?:an?\s+)?(?P<v>[^.;!?\n]{1,50})")
_p("occupation", SINGLE, r"\b(?:occupation|job|profession|métier)\s*(?::|is|est)\s*(?:an?\s+|un\s+|une\s+)?(?P<v>(?!(?:il|elle|he|she|they|je|j'|i)\b)[^.;!?\n]{1,50})")
_p("occupation", SINGLE, rf"\b(?:travaille|travaillent)\s+{_ADV}comme\s+(?P<v>[^.;!?\n]{{1,50}})")
_JOBS = """
    nurse teacher doctor physician engineer developer programmer lawyer attorney accountant architect designer chef
    cook waiter waitress pilot student journalist writer author artist musician photographer pharmacist dentist vet
    veterinarian firefighter policeman policewoman electrician plumber carpenter mechanic farmer baker butcher
    cashier consultant analyst researcher scientist professor lecturer librarian translator salesman saleswoman
    receptionist secretary therapist psychologist surgeon paramedic midwife barista bartender hairdresser retired
    unemployed freelancer entrepreneur nanny cleaner caregiver tutor coach trainer actor actress dancer singer
    infirmier infirmière professeur prof enseignant enseignante médecin docteur ingénieur ingénieure développeur
    développeuse avocat avocate comptable architecte cuisinier cuisinière serveur serveuse pilote étudiant étudiante
    journaliste écrivain écrivaine auteur autrice artiste musicien musicienne photographe pharmacien pharmacienne
    dentiste vétérinaire pompier policier policière électricien électricienne plombier menuisier mécanicien
    agriculteur agricultrice boulanger boulangère boucher bouchère caissier caissière consultante chercheur
    chercheuse scientifique bibliothécaire traducteur traductrice vendeur vendeuse secrétaire thérapeute psychologue
    chirurgien chirurgienne sage-femme chauffeur barman coiffeur coiffeuse retraité retraitée chômeur chômeuse
    entrepreneuse nounou aide-soignant aide-soignante kiné kinésithérapeute instituteur institutrice comédien
    comédienne danseur danseuse chanteur chanteuse notaire paralegal banker plombière graphiste graphic
    designer nurse's ux copywriter editor manager director ceo cto salesperson realtor estate agent postman
    postwoman courier soldier officer sailor fisherman miner welder surveyor optician radiologist
    physiotherapist physio psychiatrist counsellor counselor social worker banquier banquière directeur
    directrice rédacteur rédactrice commercial commerciale facteur factrice militaire marin pêcheur opticien
    opticienne radiologue psychiatre éducateur éducatrice agent immobilier ouvrier ouvrière gendarme
""".split()
_JOB = "|".join(sorted((re.escape(j) for j in _JOBS), key=len, reverse=True))
_p("occupation", SINGLE, rf"\b(?:{_BE}|est|suis|sont|became|has become|est devenue?|now works as|works as)\s+{_ADV}(?:an?\s+|un\s+|une\s+)?(?P<v>(?:[\w-]+\s+){{0,2}}?(?:{_JOB}))\b(?!\s+(?:at heart|by training|de formation))")

_WEEKDAY = (r"(?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|lundis?|mardis?|mercredis?|"
            r"jeudis?|vendredis?|samedis?|dimanches?)")
_p("schedule", SINGLE, rf"\b(?P<n>[\w-]+\s+(?:class|classes|lesson|lessons|practice|training|session|sessions|club))\s+(?:is\s+|are\s+|takes place\s+)?{_ADV}(?:now\s+)?(?:on|every)\s+(?P<v>{_WEEKDAY})")
_p("schedule", SINGLE, rf"\b(?:cours|séance|séances|entraînement|entraînements)\s+(?P<n>(?:de|d')\s*[\w-]+)\s*,?\s+(?:c'est|est|a lieu|ont lieu)\s+(?:maintenant\s+|désormais\s+)?(?:le|les|chaque)\s+(?P<v>{_WEEKDAY})")

_p("schedule", SINGLE, rf"\b(?:have|has|j'ai|ai|a)\s+(?P<n>[\w-]+(?:\s+(?:class|lesson|practice|training))?)\s+(?:on|every|le|les|chaque)\s+(?P<v>{_WEEKDAY})")
# studies: one subject at a time
_p("studies", SINGLE, r"\b(?:studies|is studying|majors in|is majoring in|étudie|étudies|fait des études de|fait des études d')\s+(?P<v>[^.;!?\n]{1,50})")

_p("vehicle", SINGLE, r"\b(?:drives|drive|is driving|conduit|conduis|roule en|roulent en)\s+(?:an?|une?|the|la|le|sa|son|his|her|my|ma|mon)?\s*(?P<v>[^.;!?\n]{1,40})")

_p("allergy", POLAR, rf"\b(?P<pos>{_BE}\s+{_ADV}(?:severely\s+|very\s+|mildly\s+)?allergic\s+to|(?:est|suis|sont)\s+{_ADV}(?:très\s+)?allergiques?\s+(?:à|au|aux|a))\s+(?P<v>[^.;!?\n]{{1,40}})")
_p("allergy", POLAR, rf"\b(?P<neg>(?:{_BE}\s+not|isn't|aren't|'m not|(?:est|suis|sont)\s+(?:pas|plus))\s+allergi(?:c|que|ques))\b(?!\s+(?:to|à|au|aux))(?P<v>)")
_p("allergy", POLAR, rf"\b(?P<neg>(?:{_BE}\s+not|'m not|isn't)\s+allergic\s+to\s+(?:anything|any\s+\w+)|(?:n'a|n'ai|a|ai|j'ai)\s+jamais\s+eu\s+(?:la moindre|d'|aucune|une)\s*allergies?|(?:no|aucune)\s+(?:known\s+|food\s+|alimentaire\s+)?allerg(?:y|ies|ie)\b|(?:has|have)\s+no\s+(?:known\s+)?allerg(?:y|ies)|(?:doesn't|does not|don't)\s+have\s+any\s+allerg(?:y|ies)|n'a\s+(?:aucune|pas d')\s*allergies?|n'ai\s+(?:aucune|pas d')\s*allergies?)\b(?P<v>)")

# favourites
_p("favourite", SINGLE, r"\b(?P<n>(?:favou?rite|preferred)\s+[\w-]+(?:\s+[\w-]+){0,3}?)\s+(?:is|are|has become|is now)\s+(?P<v>[^.;!?\n]{1,50})")
_p("favourite", SINGLE, r"\b(?P<n>[\w-]+(?:\s+[\w-]+)?\s+(?:préférée?s?|favorie?s?))(?P<h>\s+(?:de|d')\s*[\w' -]{1,40}?)?\s*,?\s+(?:est|sont|c'est|reste)\s+(?P<v>[^.;!?\n]{1,50})")
# preferences and habits: a yes or a no about one object
_LIKE_POS = r"(?:likes|like|loves|love|enjoys|enjoy|adores|adore|is (?:a (?:big |huge )?fan of|fond of|into|crazy about)|'s (?:a (?:big |huge )?fan of|into)|am (?:a (?:big |huge )?fan of|into)|aime|aimes|aiment|adore|adores|adorent|apprécie|raffole de|est fan de|est fan d')"
_LIKE_NEG = r"(?:(?<!n')(?:aime|aimes|supporte|supportes)\s+(?:plus|pas)(?!\s+que)|dislikes|dislike|hates|hate|detests|can't stand|cannot stand|can't bear|cannot bear|can't listen to|can't watch|can't eat|doesn't like|does not like|don't like|do not like|doesn't enjoy|does not enjoy|don't enjoy|no longer likes|no longer enjoys|doesn't love|(?:is|'s|am) not (?:a fan of|fond of|into)|(?:is|'s) no longer (?:a fan of|into)|n'aime pas|n'aime plus|n'aime guère|déteste|détestent|détestes|ne supporte pas|ne supporte plus|n'apprécie pas|n'apprécie plus|a horreur des|a horreur du|a horreur de|a horreur d')"
_p("likes", POLAR, rf"\b(?P<neg>{_LIKE_NEG})\s+(?P<v>[^.;!?\n]{{1,50}})")
_p("likes", POLAR, rf"\b(?P<pos>{_LIKE_POS})\s+(?P<v>[^.;!?\n]{{1,50}})")

_HABIT_VERBS = {  # folded verb form -> the habit's verb
    "drinks": "drink", "drink": "drink", "drinking": "drink", "boit": "drink", "bois": "drink", "boire": "drink",
    "smokes": "smoke", "smoke": "smoke", "smoking": "smoke", "fume": "smoke", "fumes": "smoke", "fumer": "smoke",
    "eats": "eat", "eat": "eat", "eating": "eat", "mange": "eat", "manges": "eat", "manger": "eat",
    "plays": "play", "play": "play", "playing": "play", "joue": "play", "jouer": "play",
    "runs": "run", "run": "run", "running": "run", "court": "run", "courir": "run",
    "goes": "go", "go": "go", "going": "go", "va": "go", "aller": "go",
    "drives": "drive", "drive": "drive", "driving": "drive", "conduit": "drive", "conduire": "drive",
    "cycles": "cycle", "cycling": "cycle", "bikes": "cycle", "biking": "cycle",
    "swims": "swim", "swim": "swim", "swimming": "swim", "nage": "swim", "nager": "swim",
    "practises": "practise", "practices": "practise", "practising": "practise", "practicing": "practise",
    "pratique": "practise", "pratiquer": "practise", "uses": "use", "use": "use", "using": "use",
    "utilise": "use", "utiliser": "use", "takes": "take", "take": "take", "taking": "take", "prend": "take",
    "prendre": "take", "walks": "walk", "walk": "walk", "walking": "walk", "meditates": "meditate",
    "meditate": "meditate", "meditating": "meditate", "médite": "meditate", "méditer": "meditate",
    "cooks": "cook", "cook": "cook", "cooking": "cook", "cuisine": "cook", "cuisiner": "cook",
    "reads": "read", "read": "read", "reading": "read", "lit": "read", "lire": "read",
    "watches": "watch", "watch": "watch", "watching": "watch", "regarde": "watch", "regarder": "watch",
    "vapes": "smoke", "vaping": "smoke", "played": "play", "smoked": "smoke", "drunk": "drink", "eaten": "eat",
    "cycled": "cycle", "swum": "swim", "ran": "run", "jogs": "run", "jogging": "run", "jog": "run",
    "nagé": "swim", "fumé": "smoke", "bu": "drink", "joué": "play", "couru": "run",
    "vélo": "cycle", "velo": "cycle", "bike": "cycle", "bicycle": "cycle",
}
# Verbs whose habit is the verb itself, whatever follows: "cycles to work" and "no longer cycles" are one habit.
_INTRANSITIVE = {"smoke", "run", "cycle", "swim", "walk", "meditate"}
_HABIT_VERB = "|".join(sorted(_HABIT_VERBS, key=len, reverse=True))
_HABIT_NEG = (r"(?:n'(?:a|ai|as|ont|avons)\s+(?:jamais|plus|pas)|(?:haven't|hasn't|has not|have not|never|no longer)\s+touch(?:ed|es)?|(?:n'a|n'ai|n'ont)\s+(?:plus|jamais|pas)\s+touché\s+(?:à|au|aux)|doesn't|does not|don't|do not|never|no longer|hardly ever|hasn't|haven't|has not|have not|has stopped|have stopped|stopped|has quit|"
              r"have quit|quit|has given up|have given up|gave up|gives up|given up|has cut out|cut out|"
              r"ne|n'|a arrêté de|a arrêté d'|ont arrêté de|arrêté de|a arrêté|ai arrêté|a cessé de|a renoncé à|ne \w+ plus|ne \w+ jamais)")
_PLAIN_NEGATIONS = {"doesn't", "does not", "don't", "do not", "never", "no longer", "hardly ever", "ne", "n'", "hasn't",
                    "haven't", "has not", "have not"}
_p("habit", POLAR, rf"\b(?P<neg>{_HABIT_NEG})\s+(?:(?:drinking|eating)\s+)?(?P<verb>{_HABIT_VERB})?\s*(?:plus\s+|jamais\s+|pas\s+|any\s*more\s+)?(?P<v>[^.;!?\n]{{0,40}})")
_p("habit", POLAR, rf"\b(?P<pos>(?P<verb>{_HABIT_VERB}))\b\s*(?P<v>[^.;!?\n]{{0,40}})")
# diet as a habit of eating meat
_p("diet", POLAR, rf"\b(?P<neg>(?:{_BE}|est|suis|sont|became|has become|devenue?)\s+(?:now\s+|a\s+|an\s+|un\s+|une\s+|strictly\s+|fully\s+)*(?:vegetarian|vegan|végétarienne?|végétalienne?|végane?|vegane?|pescatarian|pescetarian|pescétarienne?))\b(?P<v>)")
_p("diet", POLAR, rf"\b(?P<pos>(?:{_BE}|est|suis)\s+(?:no longer|not|not a|plus|pas|n'est plus|n'est pas)\s+(?:a\s+|an\s+)?(?:vegetarian|vegan|végétarienne?|végane?))\b(?P<v>)")
_p("diet", POLAR, r"\b(?P<pos>(?:eats|eat|is eating|started eating|mange|mangent|mange régulièrement|mange souvent|eats regularly|regularly eats|often eats|remange|a recommencé à manger|remis à manger|s'est remise? à manger|me suis remise? à manger)\s+(?:meat|de la viande|viande|steak|chicken|beef|pork|du poulet|du bœuf|du boeuf|everything|anything|de tout))\b(?P<v>)")
_p("diet", POLAR, r"\b(?P<neg>(?:doesn't|does not|don't|never|no longer|has stopped|stopped|gave up)\s+(?:eat|eats|eating)\s+(?:meat|any meat)|ne mange (?:plus|pas|jamais)\s+(?:de\s+)?viande|a arrêté (?:de manger )?(?:la )?viande)\b(?P<v>)")
# nationality
_NATIONALITY_WORDS = {
    "fr": "french français française", "de": "german allemand allemande", "es": "spanish espagnol espagnole",
    "it": "italian italien italienne", "gb": "british britannique english anglais anglaise",
    "us": "american américain américaine", "ca": "canadian canadien canadienne", "be": "belgian belge",
    "ch": "swiss suisse", "pt": "portuguese portugais portugaise", "nl": "dutch néerlandais néerlandaise",
    "jp": "japanese japonais japonaise", "cn": "chinese chinois chinoise", "br": "brazilian brésilien brésilienne",
    "ma": "moroccan marocain marocaine", "dz": "algerian algérien algérienne", "pl": "polish polonais polonaise",
    "ie": "irish irlandais irlandaise", "se": "swedish suédois suédoise", "in": "indian indien indienne",
    "mx": "mexican mexicain mexicaine", "au": "australian australien australienne", "dk": "danish dane danois danoise",
    "no": "norwegian norvégien norvégienne", "fi": "finnish finlandais finlandaise", "at": "austrian autrichien autrichienne",
    "gr": "greek grec grecque", "tr": "turkish turc turque", "ru": "russian russe", "ua": "ukrainian ukrainien ukrainienne",
    "tn": "tunisian tunisien tunisienne", "sn": "senegalese sénégalais sénégalaise", "ar": "argentinian argentine argentin",
    "kr": "korean coréen coréenne", "vn": "vietnamese vietnamien vietnamienne", "ng": "nigerian nigérian nigériane",
    "lb": "lebanese libanais libanaise", "eg": "egyptian égyptien égyptienne", "co": "colombian colombien colombienne",
    "cz": "czech tchèque", "hu": "hungarian hongrois hongroise", "ro": "romanian roumain roumaine",
    "scot": "scottish écossais écossaise", "nz": "new zealander néo-zélandais néo-zélandaise",
    "sg": "singaporean singapourien singapourienne", "my": "malaysian malaisien malaisienne",
    "id": "indonesian indonésien indonésienne", "ph": "filipino filipina philippin philippine",
    "th": "thai thaïlandais thaïlandaise", "pk": "pakistani pakistanais pakistanaise",
    "ir": "iranian iranien iranienne", "il": "israeli israélien israélienne", "za": "south african sud-africain sud-africaine",
    "cl": "chilean chilien chilienne", "pe": "peruvian péruvien péruvienne", "ve": "venezuelan vénézuélien vénézuélienne",
    "cu": "cuban cubain cubaine", "ht": "haitian haïtien haïtienne", "ci": "ivorian ivoirien ivoirienne",
    "cm": "cameroonian camerounais camerounaise", "gh": "ghanaian ghanéen ghanéenne", "ke": "kenyan kényan kényane",
    "et": "ethiopian éthiopien éthiopienne", "lu": "luxembourgish luxembourgeois luxembourgeoise",
    "is": "icelandic islandais islandaise", "hr": "croatian croate", "rs": "serbian serbe", "bg": "bulgarian bulgare",
    "sk": "slovak slovaque", "si": "slovenian slovène", "lt": "lithuanian lituanien lituanienne",
    "lv": "latvian letton lettone", "ee": "estonian estonien estonienne", "al": "albanian albanais albanaise",
    "wal": "welsh gallois galloise", "qc": "québécois québécoise",
}
_NATIONALITIES = {_fold(w): c for c, words in _NATIONALITY_WORDS.items() for w in words.split()}
_NATIONALITY = "|".join(sorted((w for words in _NATIONALITY_WORDS.values() for w in words.split()), key=len, reverse=True))
_p("nationality", SINGLE, rf"\b(?:{_BE}|est|suis|became|has become|est devenue?)\s+{_ADV}(?:a\s+|an\s+)?(?P<v>{_NATIONALITY})(?:\s+(?:citizen|national|citoyen|citoyenne))?\b(?!\s+(?:food|cuisine|wine|film|movie|music|teacher|course|class))")
_p("nationality", SINGLE, rf"\b(?:holds|has|have|a)\s+(?:only\s+)?(?:an?\s+|la\s+|un\s+)?(?P<v>{_NATIONALITY})\s+(?:citizenship|nationality|passport|passeport)")
_p("nationality", SINGLE, rf"\bnationalité\s+(?P<v>{_NATIONALITY})\b")
_p("nationality", SINGLE, rf"\b(?:has|have|a)\s+(?:the\s+|la\s+)?(?:nationalité\s+)?(?P<v>{_NATIONALITY})\s+(?:nationality|citizenship)?")


# --- reading values --------------------------------------------------------------------------------------

_MONTH_NUMBERS = {_fold(m): i for i, names in enumerate([
    "january janvier jan", "february février fevrier feb", "march mars mar", "april avril apr", "may mai",
    "june juin jun", "july juillet jul", "august août aout aug", "september septembre sep sept",
    "october octobre oct", "november novembre nov", "december décembre decembre dec"], start=1) for m in names.split()}
_NUMBER_WORDS = {"plus": 0, "un seul": 1, "une seule": 1, "a single": 1, "only one": 1, "just one": 1, "no": 0, "zero": 0, "aucun": 0, "aucune": 0, "pas": 0, "pas d'": 0, "pas de": 0, "any": 0,
                 "jamais eu": 0, "one": 1, "un": 1, "une": 1, "two": 2, "deux": 2, "three": 3, "trois": 3,
                 "four": 4, "quatre": 4, "five": 5, "cinq": 5, "six": 6, "seven": 7, "sept": 7, "eight": 8,
                 "huit": 8, "nine": 9, "neuf": 9, "ten": 10, "dix": 10}
_COUNT_NOUNS = {_fold(k): v for v, ks in {
    "children": "children child kids kid enfants enfant", "sons": "sons son fils boys garçons",
    "daughters": "daughters daughter filles fille girls", "fish": "fish goldfish poissons poisson",
    "horses": "horses horse chevaux cheval", "rabbits": "rabbits rabbit lapins lapin", "cars": "cars car voitures voiture",
    "grandchildren": "grandchildren petits-enfants", "pets": "pets pet animaux animal", "dogs": "dogs dog chiens chien",
    "cats": "cats cat chats chat", "siblings": "siblings", "brothers": "brothers frères freres",
    "sisters": "sisters sœurs soeurs",
}.items() for k in ks.split()}
_EXISTS = {_fold(k): v for v, ks in {
    "children": "son daughter kids children child fils fille enfants enfant",
    "pets": "dog cat puppy kitten chien chienne chat chatte chiot",
}.items() for k in ks.split()}
_MARITAL = {_fold(k): v for v, ks in {
    "married": "married mariée marié épousé épousée husband wife mari femme épouse époux", "single": "single célibataire", "divorced": "divorced divorcé divorcée",
    "widowed": "widowed widower widow veuf veuve", "engaged": "engaged fiancé fiancée", "separated": "separated séparé séparée",
    "in_relationship": "in a relationship en couple", "pacsed": "pacsé pacsée",
}.items() for k in [ks] + ks.split() if k}


def _cut(span: str) -> str:
    """A value's words up to the first clause word: 'Munich with his wife' -> 'Munich'."""
    kept = []
    for token in re.split(r"(\s+|,)", span):
        if _fold(token.strip()) in _CUT_WORDS:
            break
        kept.append(token)
    return "".join(kept).strip(" ,")


def _value_words(span: str) -> frozenset:
    """A place's, employer's or person's value: its proper names if it has any ('a flat in Kreuzberg' ->
    {kreuzberg}), otherwise its content words ('the local bakery' -> {local, bakery})."""
    tokens = _tokens(span)
    names = _names(tokens, first_at_start=False)
    if names:
        return frozenset(n[:-2] if n.endswith("'s") else n for n in names)
    words = {_stem(_fold(t)) for t in tokens if _fold(t) not in _VALUE_STOP and not _fold(t).isdigit() and len(t) > 1}
    return frozenset(words)


_IGNORED = _NOT_NAMES | _VALUE_STOP | {_fold(w) for w in """
    who whom whose which qui dont lequel laquelle autumn fall spring summer winter printemps ete automne hiver
    honestly frankly basically franchement bref enfin
    has have had having been be being is are am was were does do did will shall can must also only really
    a recently got gets getting went goes become became started starts est sont suis a ai ont avons été etre être
    vient viens viennent mentioned mentions said says told tells reports reported noted notes explained explains
    confirmed confirms shared shares added adds revealed wrote writes indique indiqué dit mentionné précise précisé
    explique expliqué raconte raconté
""".split()}


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "s", "e"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _job(word: str) -> str:
    """One form of a job's name whatever its gender: serveuse/serveur, infirmière/infirmier, avocate/avocat."""
    for feminine, masculine in (("euse", "eur"), ("trice", "teur"), ("ienne", "ien"), ("iere", "ier"), ("ere", "er")):
        if word.endswith(feminine):
            return word[: -len(feminine)] + masculine
    return _stem(word)


def _object_head(span: str) -> str | None:
    """The object of a preference or habit, reduced to its head: 'black coffee in the morning' -> 'coffee'; past a
    gerund ('wearing a wristwatch' -> 'wristwatch') and through 'of' ('the sound of chalk' -> 'chalk')."""
    words = [_fold(t) for t in _tokens(_cut(span))]
    words = [w[2:] if w.startswith("d'") and len(w) > 2 else w for w in words]  # d'alcool
    if "of" in words[:4]:
        words = words[words.index("of") + 1:]
    words = [w for w in words if w not in _MEASURES]
    content = [w for w in words if w not in _VALUE_STOP and w not in _TIME_WORDS and not w.isdigit() and len(w) > 1]
    if len(content) > 1 and content[0].endswith("ing"):
        content = content[1:]
    if not content:
        return None
    head = _stem(content[0])
    return _KINDS_OF.get(head, head)


_FAVOURITE_KINDS = {_stem(_fold(w)): kind for kind, words in {
    "book": "book books novel novels livre livres roman romans", "food": "food dish dishes meal meals plat plats repas",
    "film": "film films movie movies", "song": "song songs track tracks chanson chansons morceau",
    "band": "band bands group groupe groupes", "writer": "writer writers author authors écrivain écrivaine auteur autrice",
    "color": "color colors couleur couleurs", "drink": "drink drinks boisson boissons", "city": "city cities ville villes",
    "season": "season seasons saison saisons", "sport": "sport sports", "game": "game games jeu jeux",
}.items() for w in words.split()}
# A drink's measure says nothing of what is drunk: "a glass of wine", "une goutte d'alcool".
_MEASURES = {_fold(w) for w in "glass glasses cup cups bottle bottles pint pints drop drops verre verres tasse tasses bouteille goutte".split()}
# One habit whatever the drink: wine, beer and spirits are alcohol.
_KINDS_OF = {_stem(_fold(w)): kind for kind, words in {
    "alcohol": "alcohol alcool wine wines vin beer beers bière whisky vodka gin rum rhum booze",
}.items() for w in words.split()}

_TIME_WORDS = {_fold(w) for w in """
    every each morning mornings evening evenings night nights day days daily weekly weekend weekends week
    often always usually sometimes regularly much lot lots very really anymore more any all kinds sort kind
    tous toutes chaque matin matins soir soirs jour jours semaine week-end souvent toujours parfois beaucoup
    vraiment plus du de la le les des un une trop peu
""".split()}


def _date_parts(span: str) -> frozenset:
    tokens = [_fold(t) for t in _tokens(span)[:6]]
    parts = set()
    for i, token in enumerate(tokens):
        if re.fullmatch(r"(1[89]|20)\d\d", token):
            parts.add(f"y:{token}")
        elif token in _MONTH_NUMBERS and (token != "may" or i > 0 or len(tokens) > 1):
            parts.add(f"m:{_MONTH_NUMBERS[token]}")
        elif re.fullmatch(r"\d{1,2}(st|nd|rd|th|er)?", token):
            day = int(re.match(r"\d+", token).group())
            if 1 <= day <= 31:
                parts.add(f"d:{day}")
    if not any(p.startswith("m:") for p in parts):
        parts = {p for p in parts if not p.startswith("d:")}
    return frozenset(parts)


# --- reading a text ------------------------------------------------------------------------------------

def _sentences(text: str) -> tuple[str | None, list[str]]:
    text = _STAMP_RE.sub("", text.translate(_APOSTROPHES), count=1)
    speaker = None
    match = _SPEAKER_RE.match(text)
    if match and _fold(match.group(1)) not in _NOT_NAMES:
        speaker, text = match.group(1), text[match.end():]
    return speaker, [s for s in _SENTENCE_RE.split(text) if s.strip()]


_PAST_RE = re.compile(r"\b(?:used to|formerly|previously|once|as a child|as a kid|when (?:he|she|i|they) was|in the past|"
                      r"autrefois|auparavant|avant|quand (?:il|elle|j') ?étai[st]|enfant,|jadis|until|jusqu'en|ago|il y a|"
                      r"would like|wants to|want to|plans to|planning to|hopes to|dreams of|might|may|could|would|"
                      r"if|si |veut|voudrait|aimerait|envisage|pense à|compte)\b", re.IGNORECASE)
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
_COUNT_GROUPS = {noun: group for group, nouns in {
    "pets": "dogs cats fish horses rabbits hamsters birds chickens",
    "children": "sons daughters",
}.items() for noun in nouns.split()}


def _implied(claim: Claim) -> list[Claim]:
    if claim.attribute == "vehicle":  # "drives a Golf": there is a car
        return [Claim(claim.holder, "count:cars", COUNT, frozenset(["any"]), shown=claim.shown)]
    if claim.kind == COUNT:
        group = _COUNT_GROUPS.get(claim.attribute.split(":", 1)[1])
        count = _count(claim.value)
        if group and count:
            return [Claim(claim.holder, f"count:{group}", COUNT, frozenset(["any"]), shown=claim.shown)]
    if claim.attribute.startswith("allergy:") and claim.attribute != "allergy:any" and claim.positive:
        return [Claim(claim.holder, "allergy:any", POLAR, frozenset(), positive=True, shown=claim.shown)]
    return []


def _read_sentence(sentence: str, speaker: str | None, before: str = "") -> list[Claim]:
    found: list[Claim] = []
    taken: dict[str, list[tuple[int, int]]] = {}  # per attribute, spans already read by an earlier pattern
    sentence_holder = None
    for attribute, kind, pattern in _PATTERNS:
        for match in pattern.finditer(sentence):
            start, end = match.span()
            if any(s <= start < e for s, e in taken.get(attribute, ())):
                continue
            clause = sentence[: start]
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
    if re.search(r"years?\b|\byo\b|\bans\b|turn|aged|age|birthday", match.group(0), re.IGNORECASE):
        return True
    tokens = _tokens(prefix)
    last = _fold(tokens[-1]) if tokens else ""
    return bool(tokens) and (tokens[-1][:1].isupper() or last in _SELF_WORDS | _FIRST_PERSON or last in _RELATIONS)


_DATED_MOVE_RE = re.compile(r"(?:moved|relocated|installée?|déménagé)\b.*\b(?:in|en)\s+(?:1[89]|20)\d\d\b", re.IGNORECASE)


def _claim(attribute: str, kind: str, match: re.Match, holder: str) -> Claim | None:
    groups = match.groupdict()
    span = _cut(groups.get("v") or "")
    if kind == SINGLE:
        if attribute == "residence" and _DATED_MOVE_RE.search(match.group(0)):
            return None  # "moved to Glasgow in 2020": an event, which a later "lives in Scotland" does not deny
        if (attribute == "residence" and re.search(r"\b(?:moved|relocated)\b", match.group(0), re.IGNORECASE)
                and not _names(_tokens(span), first_at_start=False)):
            return None  # "has moved to cardiology outpatients": a move that names no place
        if attribute == "age":
            age = _number(match.group("v"))
            if age is None or age > 120:
                return None
            value = frozenset([str(age)])
        elif attribute == "nationality":
            value = frozenset([_NATIONALITIES[_fold(match.group("v"))]])
        elif attribute == "vehicle":
            value = frozenset(_names(_tokens(span), first_at_start=False))
        elif attribute == "studies":
            value = frozenset(_stem(_fold(t)) for t in _tokens(re.split(r"\s+(?:at|in|à|au|en)\s+", span)[0])
                              if _fold(t) not in _VALUE_STOP)
        elif attribute == "schedule":
            thing = _object_head(groups["n"])
            if thing is None:
                return None
            attribute = f"schedule:{thing}"
            value = frozenset([_fold(groups["v"]).rstrip("s")])
        elif attribute == "favourite":
            thing = _object_head(groups["n"].split(None, 1)[1] if groups["n"].split()[0].startswith(("favo", "pref")) else groups["n"])
            if thing is None:
                return None
            thing = re.sub(r"our$", "or", thing)  # colour = color
            attribute = f"favourite:{_FAVOURITE_KINDS.get(thing, thing)}"
            value = _value_words(span)
        elif attribute == "occupation":
            value = frozenset(_job(_fold(t)) for t in _tokens(_cut(re.split(r"\s+(?:at|for|in|chez|à|au|pour)\s+", span)[0]))
                              if _fold(t) not in _VALUE_STOP)
        else:
            value = _value_words(span)
        if not value:
            return None
        return Claim(holder, attribute, kind, value, shown=span)
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
        return Claim(holder, f"allergy:{head or 'any'}", POLAR, frozenset(), positive=positive,
                     shown=match.group(0).strip())
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
                verb, head = _HABIT_VERBS[word], _object_head(span[len(_tokens(span)[0]):])
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
        if head is None and verb in ("*", "play", "go", "use", "take", "read", "watch", "cook", "drink", "eat", "drive"):
            return None
        if head in ("meat", "viande"):
            return Claim(holder, "habit:eat:meat", POLAR, frozenset(), positive=positive, shown=match.group(0).strip())
        return Claim(holder, f"habit:{head or verb}", POLAR, frozenset(), positive=positive, shown=match.group(0).strip())
    if head is None:
        return None
    return Claim(holder, f"likes:{head}", POLAR, frozenset(), positive=positive, shown=match.group(0).strip())
