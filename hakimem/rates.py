"""Rates as the settings spell them ("600/s", "30000/min"): read at start-up, so no Django import here."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PERIODS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}


@dataclass(frozen=True)
class Rate:
    limit: int
    period: int  # seconds


def parse_rate(raw: str) -> Rate | None:
    """ "600/s", "30000/min", "1000/hour"; "" or "off": no limit."""
    raw = (raw or "").strip().lower()
    if raw in ("", "off", "none", "0"):
        return None
    match = re.fullmatch(r"(\d+)\s*/\s*(\d*)\s*([a-z]+)", raw)
    if not match or match.group(3) not in _PERIODS or int(match.group(1)) < 1:
        raise ValueError(f"cannot read the rate {raw!r} (expected N/s, N/min, N/hour or N/day)")
    return Rate(int(match.group(1)), int(match.group(2) or 1) * _PERIODS[match.group(3)])
