"""A chat loop fed through hakimem, without an LLM: before each reply it fetches the context for the user's
message and prints the prompt that would be sent to the model; after each exchange it stores what was learned
(facts) and the exchange itself (an episode). The replies and the facts "extracted" from each turn are scripted
here, where a real application would call its LLM for both.

    make run    # in another terminal: serves on 127.0.0.1:$HAKI_PORT (8000 by default), writes var/dev_api_key
    .venv/bin/python examples/chat_loop.py          # the URL: --url, else $HAKI_URL, else 127.0.0.1:$HAKI_PORT
    .venv/bin/python examples/chat_loop.py --url "$HAKI_URL" --api-key KEY --project demo --subject sam
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hakimem_client import Client, HakimemError, NewFact

SYSTEM = "You are a helpful assistant. Use the memory below when it is relevant; never mention it otherwise."

# (user message, scripted assistant reply, facts an extractor would draw from the exchange)
SCRIPT = [
    (
        "Hi! I'm Sam, I just moved to Lyon for a job at a bike shop.",
        "Welcome to Lyon, Sam! How is the new job going?",
        [dict(text="Sam lives in Lyon.", category="home"), dict(text="Sam works at a bike shop.", category="work")],
    ),
    (
        "Can you suggest something for dinner? I'm vegetarian and I can't stand mushrooms.",
        "How about a chickpea and spinach curry? No mushrooms in sight.",
        [
            dict(text="Sam is vegetarian.", category="food", kind="preference"),
            dict(text="Sam dislikes mushrooms.", category="food", kind="preference"),
        ],
    ),
    (
        "My sister Nina is visiting next weekend, she loves hiking.",
        "Nice! The Monts d'Or are an easy trip from Lyon for a hike with Nina.",
        [dict(text="Sam's sister Nina loves hiking.", category="family")],
    ),
    (
        "What should I cook for Nina and me on Saturday night?",
        "A vegetarian lasagne with roasted vegetables would suit you both after a hike.",
        [],
    ),
    ("Remind me, where did I say I work?", "At a bike shop in Lyon.", []),
]


def default_url() -> str:
    """The server `make run` starts: it listens on $HAKI_PORT, so the example follows the same variable."""
    return os.environ.get("HAKI_URL") or f"http://127.0.0.1:{os.environ.get('HAKI_PORT', '8000')}"


def default_key() -> str | None:
    key = os.environ.get("HAKI_API_KEY")
    dev_key = Path(__file__).resolve().parent.parent / "var" / "dev_api_key"
    return key or (dev_key.read_text().strip() if dev_key.exists() else None)


def prompt_for(memory_block: str, user_message: str) -> str:
    """What would be sent to the LLM: the system prompt, the memory block when one was served, the message."""
    system = f"{SYSTEM}\n\n{memory_block}" if memory_block else SYSTEM
    return f"[system]\n{system}\n[user]\n{user_message}"


def run(client: Client, subject: str, budget_tokens: int, out=sys.stdout) -> None:
    start = datetime.now(timezone.utc)
    for turn, (message, reply, learned) in enumerate(SCRIPT, 1):
        print(f"=== turn {turn} ===", file=out)
        print(f"user: {message}", file=out)
        # Before the reply: what does memory hold that matters for this message?
        packet = client.context(subject, message, budget_tokens=budget_tokens)
        print(f"--- sent to the LLM (trace {packet.trace_id}, {packet.used_tokens} memory tokens) ---", file=out)
        print(prompt_for(packet.render(), message), file=out)
        print(f"--- reply (scripted) ---\nassistant: {reply}", file=out)
        # After the exchange: the durable facts in one batch, and the exchange itself as an episode.
        if learned:
            facts = client.write_facts([NewFact(subject, **f) for f in learned])
            for fact in facts:
                note = (
                    "already known" if fact.deduplicated else ("conflict set opened" if fact.conflict_set_id else "new")
                )
                print(f"+ remembered: {fact.text} ({note})", file=out)
        client.write_event(subject, f"User: {message} / Assistant: {reply}", start + timedelta(seconds=turn))
        print(file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--url", default=default_url(), help="default: $HAKI_URL, else http://127.0.0.1:$HAKI_PORT (8000)"
    )
    parser.add_argument("--api-key", default=default_key(), help="default: $HAKI_API_KEY, else var/dev_api_key")
    parser.add_argument("--project", default=os.environ.get("HAKI_PROJECT", "demo"))
    parser.add_argument("--subject", default="chat-loop-sam")
    parser.add_argument("--budget", type=int, default=300, help="memory tokens per turn")
    parser.add_argument("--keep", action="store_true", help="keep the subject's memory from an earlier run")
    args = parser.parse_args(argv)
    if not args.api_key:
        parser.error("no API key: pass --api-key, set HAKI_API_KEY, or run `make run` once (it writes var/dev_api_key)")
    with Client(args.url, args.api_key, project_id=args.project) as client:
        try:
            if not args.keep:
                client.erase_subject(args.subject)  # each run starts from a blank memory
            run(client, args.subject, args.budget)
        except HakimemError as exc:
            if exc.code == "connection_error":  # nothing answered: no refusal to report
                print(f"could not reach hakimem at {args.url} ({exc}); is `make run` serving there?", file=sys.stderr)
            else:
                print(f"hakimem refused: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
