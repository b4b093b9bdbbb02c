from django.core.management.base import BaseCommand, CommandError

from stats.services import ROLES, MissingPermission, roles_ensure


class Command(BaseCommand):
    help = "Create the groups `curators` and `product-owners` with their permissions (safe to run again)."

    def handle(self, *args, **options):
        try:
            added = roles_ensure()
        except MissingPermission as exc:
            raise CommandError(str(exc)) from exc
        if options["verbosity"] < 1:
            return
        for name in ROLES:
            what = ", ".join(added[name]) if added[name] else "nothing missing"
            self.stdout.write(f"{name}: {what}")
