"""The words of a fact as the claim reader sees them: folded (case and accents), split into tokens with their
places, and the word lists that say which capitalised words are names and which words carry no value."""

from __future__ import annotations

import re
import unicodedata

_TOKEN_RE = re.compile(r"[\w'-]+", re.UNICODE)


def _fold(word: str) -> str:
    """Case and accents folded: 'Munich' = 'munich', 'végétarienne' ~ 'vegetarienne'. A dotless ı folds to i, as the
    patterns' IGNORECASE matches it (else a word they matched is missing from the tables keyed by its folding)."""
    decomposed = unicodedata.normalize("NFKD", word.casefold().replace("ı", "i"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


# Capitalised words that open a sentence without being a name.
_NOT_NAMES = {
    _fold(w)
    for w in """
    i i'm i've i'd i'll j me my mine we our us you your he him his she her hers they them their it its this that
    these those there here the a an and but or so then now currently recently still also just yesterday today
    last next since after before when while as at in on for from with by of to user user's subject member
    client customer person patient according apparently actually meanwhile anyway well oh yes no hey hi hello
    thanks thank sure wow great good nice okay ok lol haha
    je j' j'ai il elle ils elles on nous vous tu le la les l' un une des du de mon ma mes ton ta tes son sa ses
    notre nos votre vos leur leurs ce cette ces cet et mais ou donc puis maintenant actuellement depuis hier
    aujourd'hui desormais dorenavant utilisateur utilisatrice l'utilisateur l'utilisatrice d'apres selon oui non
    merci bonjour salut moi toi
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december lundi mardi mercredi jeudi vendredi samedi dimanche janvier
    fevrier mars avril mai juin juillet aout septembre octobre novembre decembre
""".split()
}

_SELF_WORDS = {
    "i",
    "i'm",
    "im",
    "me",
    "je",
    "j'",
    "j",
    "user",
    "subject",
    "utilisateur",
    "utilisatrice",
    "l'utilisateur",
    "l'utilisatrice",
    "he",
    "she",
    "il",
    "elle",
    "they",
}
_FIRST_PERSON = {
    "i",
    "i'm",
    "im",
    "i've",
    "i'd",
    "i'll",
    "je",
    "j'",
    "j",
    "moi",
    "my",
    "mon",
    "ma",
    "mes",
    "we",
    "we're",
    "we've",
    "our",
    "on",
    "nous",
    "notre",
    "nos",
}


_RELATIONS = {
    _fold(w): _fold(canonical)
    for canonical, words in {
        "daughter": "daughter fille",
        "son": "son fils",
        "wife": "wife femme epouse",
        "husband": "husband mari epoux",
        "sister": "sister soeur sœur",
        "brother": "brother frere",
        "mother": "mother mom mum mere maman",
        "father": "father dad pere papa",
        "partner": "partner compagne compagnon conjoint conjointe",
        "girlfriend": "girlfriend copine",
        "boyfriend": "boyfriend copain",
        "friend": "friend ami amie",
        "boss": "boss manager patron patronne cheffe chef",
        "cousin": "cousin cousine",
        "uncle": "uncle oncle",
        "aunt": "aunt tante",
        "grandmother": "grandmother grandma grand-mere mamie",
        "grandfather": "grandfather grandpa grand-pere papi",
        "colleague": "colleague coworker collegue",
        "child": "child kid enfant",
        "parent": "parents parent",
        "neighbour": "neighbour neighbor voisin voisine",
        "roommate": "roommate colocataire",
        "fiance": "fiance fiancee",
        "niece": "niece",
        "nephew": "nephew neveu",
        "baby": "baby bebe",
    }.items()
    for w in words.split()
}

_CUT_WORDS = {
    _fold(w)
    for w in """
    with since for because where who which while and but as when until after before avec depuis pour car parce
    ou qui que quand mais et jusqu'a apres avant pendant during
""".split()
}
_VALUE_STOP = {
    _fold(w)
    for w in """
    a an the in at to of on for my his her their our your its now currently still again back recently just
    already finally today this last next year years month months week weeks ago new old same
    le la les l' un une des du de d' a au aux en dans chez sur son sa ses mon ma mes leur leurs notre votre
    maintenant desormais actuellement toujours encore recemment depuis cette ce annee ans mois semaine
    city town country company firm place there here home it them this that ça cela ceci lui eux you me us him
    january february march april may june july august september october november december janvier fevrier
    avril mai juin juillet aout septembre octobre novembre decembre
""".split()
}


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
