"""The packet as a prompt block, and what each part of it costs in the budget.

Two layouts:
- plain (a call that asks for no tiers): the block seed 000 defines, `<haki_memory>` with preferences, facts and
  dated episodes, in the order models attend to best;
- tiered (seed 003's structured prompt): five sections in this order, identity, preferences, relevant facts,
  recent context (dated episodes), workflows (procedures). Identity on top gets the model's full attention;
  workflows last are read only when the turn is procedural.
Each comes as xml (default) or markdown. An empty packet renders as the empty string, never as a block that says
nothing was found (that block would itself be a distractor in the prompt).

The budget counts what is rendered: the wrapper, each section's header (and closing tag) and each item's whole
line, newline included (context.packing.Budget). The assembler packs in characters and `used_tokens` is
estimate_tokens(rendered), so a packet never exceeds budget_tokens once rendered.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

OPEN_TAG, CLOSE_TAG = "<haki_memory>", "</haki_memory>"
XML, MARKDOWN = "xml", "markdown"
RENDER_FORMATS = (XML, MARKDOWN)

# The tiers of a tiered call, in the order of their sections.
IDENTITY, PREFERENCES, FACTS, EPISODES, PROCEDURES = "identity", "preferences", "facts", "episodes", "procedures"
TIERS = (IDENTITY, PREFERENCES, FACTS, EPISODES, PROCEDURES)

# A stored text must not be able to close the block early and speak outside it, nor start a section of its own.
# What a reader sees is what counts. The text loses what no reader sees (format characters: zero-width, bidi
# overrides and isolates, tag characters; variation selectors; blank letters) and is NFKC-normalised (full width,
# ligatures). The block's name is then looked for in the text's skeleton, where spaces and the marks over letters
# are dropped, look-alikes are read as the letters they imitate (Cyrillic о, Greek ι, Cherokee Ꮇ, rn for m, 0 for
# o), the case is folded, any punctuation may stand between its two words, and it may run backwards (as a reversed
# text under an RTL override displays). Where the skeleton names the block, that stretch of the text becomes
# "haki memory"; elsewhere the text keeps its letters and marks (é, ñ, ǘ). Line breaks are folded into spaces; in
# markdown a text that starts a line or a list item cannot open a heading, quote, list, rule, fence or HTML block;
# in the tiered xml layout < > & are escaped (its section tags have other names).

# What no reader sees: the format characters that show nothing (soft hyphen, Arabic letter mark, Mongolian vowel
# separator, zero-width characters, bidi marks, embeddings, overrides and isolates, invisible operators, byte order
# mark, interlinear annotation, musical beams, tag characters), variation selectors, and the letters that show
# nothing (Hangul fillers, the Braille blank). The format characters a reader does see (Arabic number signs,
# Egyptian hieroglyph and shorthand controls) are kept.
_UNSEEN_RE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\ufe00-\ufe0f\U000e0100-\U000e01ef"
    "\u115f\u1160\u3164\uffa0\u2800]"
)


# Look-alikes of the letters of "haki memory" (Unicode's confusables, UTS #39), in both cases where a look-alike's
# lower case is not one itself.
_LOOKALIKES = {
    "h": "һҺհНнΗʜᏂᎻꓧⲎ",
    "a": "аАɑαΑ⍺Ꭺꓮᴀ",
    "k": "кКκΚĸᏦꓗᴋ",
    "i": "іІıιΙɩӀӏɪᎥꓲlǀ1",
    "m": "мМΜᴍᎷꓟ",
    "e": "еЕΕҽ℮ᴇᎬꓰ",
    "o": "оОοΟσօՕᴏᎾꓳⲟⲞ0०",
    "r": "гʀᎡꓣᴦⲅ",
    "y": "уУүҮγΥʏყᎩꓬ",
}
_LETTER_OF = {lookalike: letter for letter, lookalikes in _LOOKALIKES.items() for lookalike in lookalikes}


class _Skeleton(dict):
    """str.translate's table from a character to what a reader takes it for: nothing for a space or a mark, the
    letter a look-alike imitates, a letter without its marks, in lower case. Filled as characters are met."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        letters = "" if char.isspace() else _LETTER_OF.get(char) or char.casefold()
        self[code] = "".join(
            _LETTER_OF.get(part, part)
            for part in unicodedata.normalize("NFD", letters)
            if unicodedata.category(part) not in ("Mn", "Me")
        )
        return self[code]


def _name_pattern(letter: Callable[[str], str], space: str) -> str:
    """The block's name, forwards or backwards: each letter as letter() matches it, space between letters."""
    haki, memory = [letter(c) for c in "haki"], [letter(c) for c in "memory"]
    return "|".join(
        space.join(first) + r"[\W_]*" + space.join(second)
        for first, second in ((haki, memory), (memory[::-1], haki[::-1]))
    )


def _ascii_letter(c: str) -> str:
    return r"(?:m|r\s*n|n\s*r)" if c == "m" else f"[{c}{''.join(a for a in _LOOKALIKES[c] if a.isascii())}]"


_SKELETON = _Skeleton()
_NAME_RE = re.compile(_name_pattern(lambda c: "(?:m|rn|nr)" if c == "m" else c, ""))
# The same in an ASCII text as it is, spaces and case included: cheaper than its skeleton.
_ASCII_NAME_RE = re.compile(_name_pattern(_ascii_letter, r"\s*"), re.IGNORECASE)


def _without_block_name(text: str) -> str:
    if text.isascii():
        if not _ASCII_NAME_RE.search(text):
            return text
    elif not _NAME_RE.search(text.translate(_SKELETON)):
        return text
    # only for a text that names the block: its skeleton again, each part knowing the character it came from
    skeleton, origin = [], []
    for index, char in enumerate(text):
        seen = _SKELETON[ord(char)]
        skeleton.append(seen)
        origin += [index] * len(seen)
    kept, last = [], 0
    for match in _NAME_RE.finditer("".join(skeleton)):
        start, end = origin[match.start()], origin[match.end() - 1] + 1
        while end < len(text) and unicodedata.category(text[end]) in ("Mn", "Me"):  # the marks over its last letter
            end += 1
        kept += [text[last:start], "haki memory"]
        last = end
    return "".join(kept + [text[last:]])


def _clean(text: str) -> str:
    if not text.isascii():  # ASCII holds nothing unseen and is its own NFKC
        text = unicodedata.normalize("NFKC", _UNSEEN_RE.sub("", text))
    return " ".join(_without_block_name(text).split())


# What makes a markdown line (or a list item's first line) a heading, quote, list item, rule, fence or HTML block,
# or turns the line above into a heading (a setext underline). Spaces are single here: _clean folded them.
_MARKDOWN_BLOCK_RE = re.compile(r"#{1,6}(?: |$)|[<>|]|[-+*](?: |$)|(?:[-*_] ?){3,}$|=+ ?$|`{3}|~{3}")
_MARKDOWN_ORDERED_RE = re.compile(r"\d{1,9}(?=[.)](?: |$))")


def _markdown_block_start(text: str) -> str:
    """text, which starts a markdown line or list item, as text: a backslash before what would start a block."""
    ordered = _MARKDOWN_ORDERED_RE.match(text)
    if ordered:
        return text[: ordered.end()] + "\\" + text[ordered.end() :]
    return "\\" + text if _MARKDOWN_BLOCK_RE.match(text) else text


def _escaped(text: str) -> str:
    return _clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Section titles: the plain layout keeps seed 000's, the tiered one seed 003's.
_PLAIN_TITLES = {PREFERENCES: "Preferences", FACTS: "Facts", EPISODES: "Episodes"}
_TIERED_TITLES = {
    IDENTITY: "Identity",
    PREFERENCES: "Preferences",
    FACTS: "Relevant facts",
    EPISODES: "Recent context",
    PROCEDURES: "Workflows",
}
_XML_TAGS = {
    IDENTITY: "identity",
    PREFERENCES: "preferences",
    FACTS: "relevant_facts",
    EPISODES: "recent_context",
    PROCEDURES: "workflows",
}


@dataclass(frozen=True)
class Layout:
    """How one call renders: plain or tiered, xml or markdown. Every length below is what the part adds to
    `rendered`, its newline included."""

    tiered: bool = False
    fmt: str = XML

    @property
    def sections(self) -> tuple[str, ...]:
        return TIERS if self.tiered else (PREFERENCES, FACTS, EPISODES)

    def _opening(self) -> list[str]:
        return [OPEN_TAG] if self.fmt == XML else []

    def _closing(self) -> list[str]:
        return [CLOSE_TAG] if self.fmt == XML else []

    def wrapper_chars(self) -> int:
        lines = self._opening() + self._closing()
        return sum(len(line) + 1 for line in lines)

    def _head(self, section: str) -> list[str]:
        if self.fmt == MARKDOWN:
            return [f"## {(_TIERED_TITLES if self.tiered else _PLAIN_TITLES)[section]}"]
        return [f"<{_XML_TAGS[section]}>"] if self.tiered else [f"{_PLAIN_TITLES[section]}:"]

    def _tail(self, section: str) -> list[str]:
        return [f"</{_XML_TAGS[section]}>"] if self.tiered and self.fmt == XML else []

    def section_chars(self, section: str) -> int:
        return sum(len(line) + 1 for line in self._head(section) + self._tail(section))

    def _text(self, text: str, starts_block: bool = False) -> str:
        """starts_block: the text starts a line or a list item (not so after an episode's date)."""
        if self.tiered and self.fmt == XML:
            return _escaped(text)
        if self.fmt == MARKDOWN and starts_block:
            return _markdown_block_start(_clean(text))
        return _clean(text)

    def line(self, section: str, item) -> str:
        """One served item's line. item: a retrieval candidate (fact, episode or procedure) or an identity block."""
        if section == IDENTITY:
            return self._text(item.text, starts_block=True)
        if section == EPISODES:
            return f"- {item.occurred_at.date().isoformat()}: {self._text(item.text)}"
        if section == PROCEDURES:
            return f"- {self._text(item.title, starts_block=True)}: {self._text(item.text)}"
        if section == FACTS and item.valid_from is not None:
            return f"- {self._text(item.text, starts_block=True)} (since {item.valid_from.date().isoformat()})"
        return f"- {self._text(item.text, starts_block=True)}"

    def render(self, lines_by_section: dict[str, list[str]]) -> str:
        """The block: the sections that hold a line, in order, inside the wrapper; "" when none does."""
        body = []
        for section in self.sections:
            lines = lines_by_section.get(section)
            if lines:
                body += self._head(section) + lines + self._tail(section)
        if not body:
            return ""
        return "\n".join(self._opening() + body + self._closing())
