"""Replay a sample of a project's stored context calls under a changed configuration, and say what it would do.

    python manage.py replay --project acme --overrides overrides.json                       # the last 30 days, now
    python manage.py replay --project acme --subject user-42 --since 2026-11-01 --until 2026-12-01 \\
        --overrides overrides.json --as-of original --limit 500 --json replay.json

overrides.json holds what POST /v1/inspect/{trace_id}/replay accepts as "overrides" (README.md, Replay), e.g.
{"w_recency": 0.15, "budget_tokens": 600}; {} replays under today's configuration. Each replay writes a trace
marked as one (never counted in the statistics, erased with its subject).
"""

import json
import sys
from datetime import datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from rest_framework.exceptions import ValidationError
from tqdm import tqdm

from context.replay import AS_OF_NOW, AS_OF_ORIGINAL, replay_batch, replay_sample
from context.serializers import ReplayOverridesSerializer
from hakimem.errors import ApiError
from hakimem.serializers import validated


def _moment(text: str, name: str) -> datetime:
    """An ISO date (midnight UTC) or an ISO moment with an offset."""
    moment = parse_datetime(text)
    if moment is None:
        day = parse_date(text)
        if day is None:
            raise CommandError(f"--{name}: expected an ISO date (2026-11-01) or moment with an offset")
        return datetime.combine(day, time.min, tzinfo=dt_timezone.utc)
    if timezone.is_naive(moment):
        raise CommandError(f"--{name}: a moment needs an offset (2026-11-01T10:00:00Z)")
    return moment


class Command(BaseCommand):
    help = "Replay a sample of stored context calls under overrides and print what would change"

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--subject", default=None)
        parser.add_argument("--since", default=None, help="ISO date or moment (default: 30 days before --until)")
        parser.add_argument("--until", default=None, help="ISO date or moment, excluded (default: now)")
        parser.add_argument("--overrides", default=None, help="a JSON file of overrides (default: none)")
        parser.add_argument("--as-of", choices=[AS_OF_NOW, AS_OF_ORIGINAL], default=AS_OF_NOW, dest="as_of")
        parser.add_argument("--limit", type=int, default=200, help="calls replayed at most (default 200)")
        parser.add_argument("--json", default=None, dest="json_out", help="write the figures and every call's here")

    def handle(self, *args, project, subject, since, until, overrides, as_of, limit, json_out, **options):
        if limit < 1:
            raise CommandError("--limit: expected at least 1")
        until = _moment(until, "until") if until else timezone.now()
        since = _moment(since, "since") if since else until - timedelta(days=30)
        if since >= until:
            raise CommandError("--since must be before --until")
        raw = {}
        if overrides:
            try:
                with open(overrides, encoding="utf-8") as f:
                    raw = json.load(f)
            except (OSError, ValueError) as exc:
                raise CommandError(f"--overrides: {exc}") from None
        try:
            checked = dict(validated(ReplayOverridesSerializer, raw))
        except ValidationError as exc:
            raise CommandError(f"--overrides: {json.dumps(exc.detail)}") from None
        except ApiError as exc:
            raise CommandError(f"--overrides: {exc.message}") from None

        traces = replay_sample(project_id=project, subject_id=subject, since=since, until=until, limit=limit)
        err = sys.stderr
        with tqdm(total=len(traces), unit="call", desc="replay", file=err, disable=not err.isatty()) as bar:
            report = replay_batch(traces=traces, as_of=as_of, overrides=checked, progress=lambda: bar.update(1))
        report = {
            "project_id": project,
            "subject_id": subject,
            "since": since.isoformat(),
            "until": until.isoformat(),
            **report,
        }
        self._print(report)
        if json_out:
            with open(json_out, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=2, ensure_ascii=False)
            self.stdout.write(f"details written to {json_out}")

    def _print(self, r: dict) -> None:
        def pct(x):
            return "-" if x is None else f"{100 * x:.1f}%"

        def num(x):
            return "-" if x is None else f"{x:.1f}"

        w = self.stdout.write
        w(
            f"replayed {r['calls']} context calls of {r['project_id']}{'/' + r['subject_id'] if r['subject_id'] else ''}"
            f" from {r['since']} to {r['until']}, as_of {r['as_of']}, overrides {json.dumps(r['overrides'])}"
            + (f" ({r['skipped']} skipped: subject erased)" if r["skipped"] else "")
        )
        w(f"calls whose served set changes: {pct(r['changed_share'])}")
        jaccard = "-" if r["mean_jaccard"] is None else f"{r['mean_jaccard']:.3f}"
        w(f"mean Jaccard overlap of served items: {jaccard}")
        w(f"injection rate: {pct(r['injection_rate_before'])} -> {pct(r['injection_rate_after'])}")
        w(f"mean used tokens: {num(r['mean_used_tokens_before'])} -> {num(r['mean_used_tokens_after'])}")
        for title, key in (("most often gained", "most_gained"), ("most often lost", "most_lost")):
            w(f"{title}:" + ("" if r[key] else " none"))
            for item in r[key]:
                w(f"  {item['calls']:>5}  {item['item_type']} {item['item_id']}  {item['text'][:70]}")
