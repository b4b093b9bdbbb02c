"""Give a very large scope its own hnsw graph, or take it away.

    python manage.py scope_graph create --project P --subject S
    python manage.py scope_graph drop --project P --subject S
    python manage.py scope_graph list
    python manage.py scope_graph ensure [--min-facts N] [--dry-run]   # every scope of N facts or more

Worth it for a scope of tens of thousands of facts in a table many times larger (docs/performance.md has the
measurements); the next context call picks the graph up (it is part of the statistics' version). `ensure` gives one to every
scope of HAKI_SCOPE_GRAPH_MIN_FACTS active facts or more (10,000 by default), and its own full-text index to every scope
of HAKI_SCOPE_TEXT_INDEX_MIN_FACTS (50,000), as the nightly consolidation does; `drop` drops both.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from facts.scope_graphs import (
    SCOPE_TEXT_INDEX_PREFIX,
    scope_graph_create,
    scope_graph_drop,
    scope_graph_list,
    scope_graphs_ensure,
    scope_text_indexes_ensure,
)


class Command(BaseCommand):
    help = "Create, drop or list dedicated hnsw graphs of single large scopes"

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["create", "drop", "list", "ensure"])
        parser.add_argument("--project")
        parser.add_argument("--subject")
        parser.add_argument("--min-facts", type=int, help="ensure: the scope size (default HAKI_SCOPE_GRAPH_MIN_FACTS)")
        parser.add_argument("--dry-run", action="store_true", help="ensure: list the scopes, create nothing")

    def handle(self, *args, action, project, subject, min_facts, dry_run, **options):
        if action == "ensure":
            min_facts = settings.HAKI_SCOPE_GRAPH_MIN_FACTS if min_facts is None else min_facts
            if min_facts < 1:
                raise CommandError("--min-facts: expected a number of facts, 1 or more")
            due = scope_graphs_ensure(min_facts=min_facts, dry_run=dry_run)
            for project_id, subject_id, facts in due:
                self.stdout.write(
                    f"{'would create' if dry_run else 'created'} the graph of {project_id} / {subject_id}"
                    f" ({facts} active facts)"
                )
            self.stdout.write(
                f"{len(due)} scope(s) of {min_facts} active facts or more without a graph"
                f"{' (dry run)' if dry_run else ''}"
            )
            # The largest scopes' own full-text indexes, at their own size (the nightly consolidation does both).
            text_min = settings.HAKI_SCOPE_TEXT_INDEX_MIN_FACTS
            for project_id, subject_id, facts in scope_text_indexes_ensure(min_facts=text_min, dry_run=dry_run):
                self.stdout.write(
                    f"{'would create' if dry_run else 'created'} the full-text index of {project_id} /"
                    f" {subject_id} ({facts} active facts, HAKI_SCOPE_TEXT_INDEX_MIN_FACTS {text_min})"
                )
            return
        if action == "list":
            for name, predicate, size in [*scope_graph_list(), *scope_graph_list(SCOPE_TEXT_INDEX_PREFIX)]:
                self.stdout.write(f"{name}  {size / 2**20:.1f} MB  {predicate}")
            return
        if not project or not subject:
            raise CommandError("--project and --subject are required")
        if action == "create":
            self.stdout.write(f"created {scope_graph_create(project_id=project, subject_id=subject)}")
        elif scope_graph_drop(project_id=project, subject_id=subject):
            self.stdout.write("dropped")
        else:
            self.stdout.write("no graph for that scope")
