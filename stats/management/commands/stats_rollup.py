"""Roll up the traces of the closed 5-minute slices into the statistics' rollup (stats/rollup.py).

    python manage.py stats_rollup                       # every project, every slice closed and not rolled up yet
    python manage.py stats_rollup --project acme        # one project (repeatable)
    python manage.py stats_rollup --project acme --rebuild   # forget its rollup and build it again from its traces

Run it every 5 minutes from cron (or the `stats` queue's periodic task, stats/tasks.py): the raw part of an
overview's period is then ROLLUP_LAG and a slice or two. Idempotent: a slice is rolled up once; each day is its own
transaction. A rebuild counts only the traces there are: the rows it forgets of
traces pruned since are not built again.
"""

from django.core.management.base import BaseCommand, CommandError

from stats.rollup import stats_rollup, stats_rollup_forget


class Command(BaseCommand):
    help = "Roll up the closed 5-minute slices of traces for GET /v1/stats/overview and the /stats/ pages"

    def add_arguments(self, parser):
        parser.add_argument("--project", action="append", dest="projects", help="only this project (repeatable)")
        parser.add_argument(
            "--rebuild", action="store_true", help="forget the projects' rollup first (needs --project)"
        )

    def handle(self, *args, projects, rebuild, **options):
        if rebuild and not projects:
            raise CommandError("--rebuild: name the projects to rebuild with --project")
        for project_id in projects if rebuild else ():
            stats_rollup_forget(project_id=project_id)
        counts = stats_rollup(project_ids=projects)
        self.stdout.write(
            f"rolled up {counts['traces']} traces in {counts['slices']} 5-minute slices "
            f"of {counts['projects']} projects ({counts['days']} transactions)"
        )
