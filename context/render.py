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
from dataclasses import dataclass

OPEN_TAG, CLOSE_TAG = "<haki_memory>", "</haki_memory>"
XML, MARKDOWN = "xml", "markdown"
RENDER_FORMATS = (XML, MARKDOWN)

# The tiers of a tiered call, in the order of their sections.
IDENTITY, PREFERENCES, FACTS, EPISODES, PROCEDURES = "identity", "preferences", "facts", "episodes", "procedures"
TIERS = (IDENTITY, PREFERENCES, FACTS, EPISODES, PROCEDURES)

# A stored text must not be able to close the block early and speak outside it: the block's name is taken out
# of it in any case ("</HAKI_MEMORY>"), width (full-width letters, folded by NFKC), and with anything between
# its letters that a reader would skip (zero-width characters), and any spaces or punctuation between its two
# words ("</ haki - memory >"). Line breaks are folded into spaces, so no text can start a line (a markdown
# heading) either; in the tiered xml layout, < > & are escaped as well (its section tags have other names).
_INVISIBLE = "\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff"
_GAP = f"[{_INVISIBLE}]*"
_NAME_RE = re.compile(
    _GAP.join("haki") + f"[\\s\\W_{_INVISIBLE}]*" + _GAP.join("memory"), re.IGNORECASE
)


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return " ".join(_NAME_RE.sub("haki memory", text).split())


def _escaped(text: str) -> str:
    return _clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Section titles: the plain layout keeps seed 000's, the tiered one seed 003's.
_PLAIN_TITLES = {PREFERENCES: "Preferences", FACTS: "Facts", EPISODES: "Episodes"}
_TIERED_TITLES = {IDENTITY: "Identity", PREFERENCES: "Preferences", FACTS: "Relevant facts",
                  EPISODES: "Recent context", PROCEDURES: "Workflows"}
_XML_TAGS = {IDENTITY: "identity", PREFERENCES: "preferences", FACTS: "relevant_facts",
             EPISODES: "recent_context", PROCEDURES: "workflows"}


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

    def _text(self, text: str) -> str:
        return _escaped(text) if self.tiered and self.fmt == XML else _clean(text)

    def line(self, section: str, item) -> str:
        """One served item's line. item: a retrieval candidate (fact, episode or procedure) or an identity block."""
        if section == IDENTITY:
            return self._text(item.text)
        if section == EPISODES:
            return f"- {item.occurred_at.date().isoformat()}: {self._text(item.text)}"
        if section == PROCEDURES:
            return f"- {self._text(item.title)}: {self._text(item.text)}"
        if section == FACTS and item.valid_from is not None:
            return f"- {self._text(item.text)} (since {item.valid_from.date().isoformat()})"
        return f"- {self._text(item.text)}"

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
