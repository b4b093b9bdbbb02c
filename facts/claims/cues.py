"""Which predicate patterns can match a sentence, found without running them: each pattern's cues, literal strings
one of which every match of it contains, read from the pattern itself. A sentence holding none of a pattern's cues
is not searched with it. An 8,000-character fact has ~100 sentences and the table ~80 patterns; most sentences
hold the cues of a few only. The reader's answers are unchanged: a pattern skipped could not have matched."""

from __future__ import annotations

import re
from re import _constants as sre  # the parser's node kinds (Python's own `re` reads patterns with these)
from re import _parser

# Under IGNORECASE these four also match an ASCII letter that lower() does not give (the `re` docs): mapped first,
# so a sentence's lowered text holds every cue its matches hold.
_FOLD = str.maketrans({"İ": "i", "ı": "i", "ſ": "s", "K": "k"})
# A cue's characters are ones whose case pairs lower() gives exactly as IGNORECASE matches them; a literal with any
# other is not used as a cue (its part of the pattern then requires nothing).
_CUE_CHARS = re.compile(r"[a-z0-9 '\-:.,àâäçéèêëîïôöùûüÿœæ]+")


class CueFinder:
    """Every one of a set of cues that a sentence holds, in one pass of one regular expression: a trie of the cues
    looked for at every position, which gives the longest cue starting there; the others starting there are its
    prefixes (two cues at one position both begin the rest of the sentence)."""

    def __init__(self, cues):
        self.cues = frozenset(cues)
        self._regex = re.compile(f"(?=({_trie(sorted(self.cues))}))")
        self._prefixes = {cue: frozenset(c for c in self.cues if cue.startswith(c)) for cue in self.cues}

    def __call__(self, sentence: str) -> set[str]:
        found: set[str] = set()
        for match in self._regex.finditer(sentence.translate(_FOLD).lower()):
            found |= self._prefixes[match.group(1)]
        return found


def _trie(cues: list[str]) -> str:
    """A regular expression matching any of `cues` (sorted), the longest one where several begin at one place."""
    if cues == [""]:
        return ""
    ends_here = cues[0] == ""
    branches = []
    for first in dict.fromkeys(cue[0] for cue in cues if cue):
        rest = [cue[1:] for cue in cues if cue[:1] == first]
        branches.append(re.escape(first) + _trie(rest))
    body = "|".join(branches)
    if ends_here:
        return f"(?:{body})?"
    return body if len(branches) == 1 else f"(?:{body})"


def _best(options: list[frozenset[str]]) -> frozenset[str] | None:
    """Of several cue sets a match must each meet, the most telling: the longest shortest cue, then the fewest."""
    if not options:
        return None
    return max(options, key=lambda cues: (min(map(len, cues)), -len(cues)))


def _required(nodes) -> frozenset[str] | None:
    """Strings one of which every match of the parsed sequence `nodes` contains (lowered), or None if none is known."""
    options: list[frozenset[str]] = []
    run: list[str] = []

    def close_run() -> None:
        text = "".join(run).lower()
        run.clear()
        if text and _CUE_CHARS.fullmatch(text):
            options.append(frozenset([text]))

    for op, av in nodes:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        close_run()
        if op is sre.SUBPATTERN:
            cues = _required(av[3])
        elif op is sre.ATOMIC_GROUP:
            cues = _required(av)
        elif op is sre.BRANCH:
            branches = [_required(branch) for branch in av[1]]
            cues = None if any(b is None for b in branches) else frozenset().union(*branches)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            cues = _required(av[2]) if av[0] >= 1 else None
        else:  # a character class, any character, an anchor, a lookaround: no literal that a match must hold
            cues = None
        if cues:
            options.append(cues)
    close_run()
    return _best(options)


def pattern_cues(pattern: re.Pattern) -> frozenset[str] | None:
    """The cues of a compiled pattern (one of them is in every match, lowered), or None: the pattern always runs."""
    return _required(_parser.parse(pattern.pattern, pattern.flags))
