"""manage.py replay: a sample of stored calls replayed under overrides, and what the change would do across them."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import PROJECT
from traces.models import Trace

pytestmark = pytest.mark.django_db

PLANTS = ("leeks", "beans", "basil", "chard", "onion", "melon", "thyme", "maize")  # 8 facts of 8 tokens each


@pytest.fixture
def small_project(api):
    """Two calls on alice's 8 facts of 8 tokens (all served under 400 tokens), one on bob's empty scope, and a
    replay, which the command must not sample."""
    for plant in PLANTS:
        assert (
            api.post(
                "/v1/facts",
                {"project_id": PROJECT, "subject_id": "alice", "text": f"Alice grows {plant} in her garden."},
                format="json",
            ).status_code
            == 201
        )
    traces = []
    for subject in ("alice", "alice", "bob"):
        body = api.post(
            "/v1/context",
            {
                "project_id": PROJECT,
                "subject_id": subject,
                "budget_tokens": 400,
                "query": "What does Alice grow in her garden?",
            },
            format="json",
        ).json()
        traces.append(body)
    # used_tokens counts the rendered block: the wrapper, the "Facts:" header and eight lines of 35 characters
    assert [len(t["facts"]) for t in traces] == [8, 8, 0] and traces[0]["used_tokens"] == 78
    assert api.post(f"/v1/inspect/{traces[0]['trace_id']}/replay", {}, format="json").status_code == 200
    return traces


def run(tmp_path, *args, overrides=None):
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps(overrides or {}))
    out = StringIO()
    call_command(
        "replay",
        "--project",
        PROJECT,
        "--overrides",
        str(path),
        "--json",
        str(tmp_path / "out.json"),
        *args,
        stdout=out,
    )
    return out.getvalue(), json.loads((tmp_path / "out.json").read_text())


def test_batch_figures_of_a_smaller_budget(tmp_path, small_project):
    # when the project's calls are replayed with 30 tokens (124 characters of rendered block: 29 for the wrapper,
    # 7 for the header and 35 a line): one fact in the first pass (24 characters held for multi-hop), then one more
    text, report = run(tmp_path, overrides={"budget_tokens": 30})
    # then each of alice's calls keeps 2 of its 8 facts, bob's stays empty
    assert report["calls"] == 3 and report["skipped"] == 0
    assert report["changed_share"] == pytest.approx(2 / 3)
    assert report["mean_jaccard"] == pytest.approx((0.25 + 0.25 + 1.0) / 3)
    assert report["injection_rate_before"] == pytest.approx(2 / 3) and report["injection_rate_after"] == pytest.approx(
        2 / 3
    )
    assert report["mean_used_tokens_before"] == pytest.approx(156 / 3)
    assert report["mean_used_tokens_after"] == pytest.approx(52 / 3)
    assert report["most_gained"] == [] and len(report["most_lost"]) == 6
    assert {item["calls"] for item in report["most_lost"]} == {2}
    assert "calls whose served set changes: 66.7%" in text and "mean used tokens: 52.0 -> 17.3" in text
    assert "injection rate: 66.7% -> 66.7%" in text
    # and the replays are marked as such: 1 before the command, 3 written by it
    assert Trace.objects.filter(replay_of__isnull=False).count() == 4


def test_batch_as_it_was_with_no_override_changes_nothing(tmp_path, small_project):
    _, report = run(tmp_path, "--as-of", "original", "--subject", "alice", "--limit", "5")
    assert report["calls"] == 2 and report["changed_share"] == 0 and report["mean_jaccard"] == 1.0
    assert report["mean_used_tokens_after"] == report["mean_used_tokens_before"] == 78


def test_batch_refuses_bad_overrides(tmp_path, small_project):
    with pytest.raises(CommandError, match="w_recency"):
        run(tmp_path, overrides={"w_recency": 2})
    with pytest.raises(CommandError, match="budget_tokens"):
        run(tmp_path, overrides={"budget_tokens": 0})
