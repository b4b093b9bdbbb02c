"""Who a clause is about: a name, a relation of a name or of the subject, a thing, or the subject itself."""

from __future__ import annotations

import itertools
import re

from facts.claims.clashes import ANYONE
from facts.claims.words import (
    _FIRST_PERSON,
    _NOT_NAMES,
    _RELATIONS,
    _VALUE_STOP,
    _first_name,
    _fold,
    _spans,
)

_CLAUSE_APPOSITIVE_RE = re.compile(r"^\s*((?-i:[A-Z])[\w'-]+)\s*,[^,]{1,60},\s*$")
_APPOSITIVE_RE = re.compile(r"^\s*([A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+)?\s*,")


_PRONOUNS = {"he", "she", "il", "elle", "they", "ils", "elles", "him", "her"}
_POSSESSIVES = {"his", "her", "their", "son", "sa", "ses", "leur", "leurs"}


# Words of a subject phrase that name nobody (adverbs, auxiliaries, articles).
_IGNORED = (
    _NOT_NAMES
    | _VALUE_STOP
    | {
        _fold(w)
        for w in """
    who whom whose which qui dont lequel laquelle autumn fall spring summer winter printemps ete automne hiver
    honestly frankly basically franchement bref enfin
    has have had having been be being is are am was were does do did will shall can must also only really
    a recently got gets getting went goes become became started starts est sont suis a ai ont avons été etre être
    vient viens viennent mentioned mentions said says told tells reports reported noted notes explained explains
    confirmed confirms shared shares added adds revealed wrote writes indique indiqué dit mentionné précise précisé
    explique expliqué raconte raconté affirme affirmé déclare déclaré assure assuré claims insists switched changed updated
""".split()
    }
)


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
    relative = re.search(
        r"\b(?:who|which|qui)\s*(?:(?:now|still|also|currently|just|maintenant|désormais|aussi|toujours)\s+)*$",
        prefix,
        re.IGNORECASE,
    )
    if relative:  # "Mei, who now lives": the name just before the relative pronoun
        named = _last_name(context[: len(context) - len(prefix)] + prefix[: relative.start()])
        if named:
            return named
    heads: list[tuple[str, str]] = []  # (kind, word): name | relation | me | pronoun | thing
    previous_end = None  # where the previous token ended, when it was a name
    for token, start, end in _spans(prefix):
        if (
            previous_end is not None
            and not prefix[previous_end:start].strip()
            and token[:1].isupper()
            and _fold(token) not in _NOT_NAMES
        ):
            previous_end = end
            continue  # "Priya Raman": the first name is the one a later fact uses
        previous_end = None
        if token[:2].casefold() == "d'" and len(token) > 2 and token[2:3].isupper():
            heads.append(("of", "d"))  # le frère d'Henri: Henri's brother, as "le frère de Bob"
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
        if any(
            w in _FIRST_PERSON or w in ("user", "utilisateur", "utilisatrice", "l'utilisateur", "l'utilisatrice")
            for w in opening
        ):
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
