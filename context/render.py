"""The packet as a prompt block. Sections follow the order models attend to best (preferences, then
facts, then dated episodes); an empty packet renders as the empty string, never as a block that says
nothing was found (that block would itself be a distractor in the prompt)."""
from __future__ import annotations

import re
import unicodedata

OPEN_TAG, CLOSE_TAG = "<haki_memory>", "</haki_memory>"

# A stored text must not be able to close the block early and speak outside it: the block's name is taken out
# of it in any case ("</HAKI_MEMORY>"), width (full-width letters, folded by NFKC), and with anything between
# its letters that a reader would skip (zero-width characters), and any spaces or punctuation between its two
# words ("</ haki - memory >").
_INVISIBLE = "\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff"
_GAP = f"[{_INVISIBLE}]*"
_NAME_RE = re.compile(
    _GAP.join("haki") + f"[\\s\\W_{_INVISIBLE}]*" + _GAP.join("memory"), re.IGNORECASE
)


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return " ".join(_NAME_RE.sub("haki memory", text).split())


def render_packet(facts: list[dict], episodes: list[dict]) -> str:
    if not facts and not episodes:
        return ""
    preferences = [f for f in facts if f["kind"] == "preference"]
    plain = [f for f in facts if f["kind"] != "preference"]
    lines = [OPEN_TAG]
    if preferences:
        lines.append("Preferences:")
        lines += [f"- {_clean(f['text'])}" for f in preferences]
    if plain:
        lines.append("Facts:")
        for f in plain:
            since = f" (since {f['valid_from'][:10]})" if f.get("valid_from") else ""
            lines.append(f"- {_clean(f['text'])}{since}")
    if episodes:
        lines.append("Episodes:")
        lines += [f"- {e['occurred_at'][:10]}: {_clean(e['text'])}" for e in episodes]
    lines.append(CLOSE_TAG)
    return "\n".join(lines)
