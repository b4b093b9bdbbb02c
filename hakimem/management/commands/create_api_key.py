from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from hakimem.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for one project and print it once (only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="the project_id this key may read and write")
        parser.add_argument("--label", default="", help="a note to recognise the key by")

    def handle(self, *args, project, label, **options):
        try:
            key, raw = api_key_create(project_id=project, label=label)
        except ValidationError as exc:
            raise CommandError(f"cannot create key: {exc}") from exc
        self.stdout.write(raw)
        self.stderr.write(f"Key {key.prefix}… for project {project!r}. Store it now: it is not shown again.")
