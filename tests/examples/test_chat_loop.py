"""examples/chat_loop.py run as a user runs it (a subprocess) against the app on a live server."""

import subprocess
import sys
from pathlib import Path

from facts.models import Event, Fact
from tests.conftest import PROJECT
from traces.models import Trace

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "chat_loop.py"


def run_example(live_server, api_key, *extra):
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--url",
            live_server.url,
            "--api-key",
            api_key,
            "--project",
            PROJECT,
            "--subject",
            "sam",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def turns(stdout: str) -> list[str]:
    return stdout.split("=== turn ")[1:]


def test_the_chat_loop_feeds_memory_into_later_prompts(live_server, api_key):
    # given a blank memory / when the scripted chat runs
    run = run_example(live_server, api_key)
    # then it ran every turn, each prompt printed before its reply
    assert run.returncode == 0, run.stderr
    shown = turns(run.stdout)
    assert len(shown) == 5 and all("--- sent to the LLM" in t and "[user]\n" in t for t in shown)
    # the first prompt carries no memory; later ones carry what earlier exchanges taught
    assert "<haki_memory>" not in shown[0]
    assert (
        "Sam is vegetarian." in shown[3].split("--- reply")[0]
        and "Sam dislikes mushrooms." in shown[3].split("--- reply")[0]
    )
    assert "Sam works at a bike shop." in shown[4].split("--- reply")[0]
    # and the store holds the facts, one episode per exchange, and one trace per turn
    assert Fact.objects.filter(project_id=PROJECT, subject_id="sam", status="active").count() == 5
    assert Event.objects.filter(subject_id="sam").count() == 5 and Trace.objects.filter(subject_id="sam").count() == 5


def test_a_second_run_starts_from_a_blank_memory(live_server, api_key):
    # given a first run / when a second runs without --keep
    assert run_example(live_server, api_key).returncode == 0
    second = run_example(live_server, api_key)
    # then its first prompt again has no memory, and nothing was duplicated
    assert second.returncode == 0 and "<haki_memory>" not in turns(second.stdout)[0]
    assert Fact.objects.filter(subject_id="sam").count() == 5


def test_a_bad_key_is_reported_not_raised(live_server, api_key):
    run = run_example(live_server, "not-a-key")
    assert run.returncode == 1 and "unauthenticated" in run.stderr and "Traceback" not in run.stderr


def test_no_server_is_reported_as_unreachable_not_as_a_refusal():
    # given a port nothing listens on (bound, then closed)
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # when the example runs against it / then it says the server could not be reached
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--url", f"http://127.0.0.1:{port}", "--api-key", "k"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 1 and "could not reach hakimem" in run.stderr and "hakimem refused" not in run.stderr
