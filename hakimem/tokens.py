"""The token estimate every budget is counted in: the assembler's packing (context.scoring re-exports it) and
the identity blocks' cost the API shows (facts), which may not import context."""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """About four characters per token: cheap, tokenizer-free, and what the budget is counted in."""
    return max(1, len(text) // 4)
