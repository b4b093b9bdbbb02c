"""Count the words of every large scope again, as the nightly consolidation does.

    python manage.py scope_words                  # every scope of HAKI_SCOPE_WORDS_MIN_ITEMS facts or events
    python manage.py scope_words --min-items 500

The context call reads the counts of its query's words (context/retrieval.py) to choose which words the lexical leg
fetches and which names multi-hop walks the scope for; docs/performance.md has the measurements.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from facts.scope_words import scope_words_refresh


class Command(BaseCommand):
    help = "Count the words of every scope of HAKI_SCOPE_WORDS_MIN_ITEMS active facts or events, or more"

    def add_arguments(self, parser):
        parser.add_argument("--min-items", type=int, help="the scope size (default HAKI_SCOPE_WORDS_MIN_ITEMS)")

    def handle(self, *args, min_items, **options):
        min_items = settings.HAKI_SCOPE_WORDS_MIN_ITEMS if min_items is None else min_items
        if min_items < 1:
            raise CommandError("--min-items: expected a number of items, 1 or more")
        counted = scope_words_refresh(min_items=min_items)
        self.stdout.write(
            f"{counted} scope(s)' words counted (their facts and their events apart), "
            f"every scope of {min_items} items or more"
        )
