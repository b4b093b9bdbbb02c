"""The packet as a prompt block. Sections follow the order models attend to best (preferences, then
facts, then dated episodes); an empty packet renders as the empty string, never as a block that says
nothing was found (that block would itself be a distractor in the prompt)."""
from __future__ import annotations

OPEN_TAG, CLOSE_TAG = "<haki_memory>", "</haki_memory>"


def _clean(text: str) -> str:
    # A stored text must not be able to close the block early and speak outside it.
    return " ".join(text.replace("haki_memory", "haki memory").split())


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
