from django.core.management.base import BaseCommand, CommandError

from hakimem.models import ApiKey
from hakimem.services import api_key_revoke


class Command(BaseCommand):
    help = "Revoke an API key, given the prefix shown in the admin (hk_xxxxxxx)."

    def add_arguments(self, parser):
        parser.add_argument("prefix")

    def handle(self, *args, prefix, **options):
        keys = list(ApiKey.objects.filter(prefix=prefix, revoked_at__isnull=True))
        if len(keys) != 1:
            raise CommandError(f"{len(keys)} active keys have the prefix {prefix!r}; expected exactly one")
        api_key_revoke(key=keys[0])
        self.stdout.write(f"revoked {keys[0]}")
