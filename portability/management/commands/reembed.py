"""Recompute every fact's and event's embedding with the configured embedder, or the one given.

    python manage.py reembed [--provider sentence-transformers|minilm-int8|multilingual-e5-small|hashing|openai] [--batch-size 256] [--restart]

Resumable: an interrupted run continues where it stopped when run again with the same embedder, and a
finished one is not redone (--restart forces a new pass). How and why: portability/reembed.py.
"""

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from hakimem.embeddings import PROVIDERS, EmbedderUnavailable, get_embedder
from portability.reembed import (
    DEFAULT_BATCH_SIZE,
    ReembedRefused,
    check_dimension,
    reembed_batches,
    reembed_remaining,
    reembed_start,
    single_run,
)


class Command(BaseCommand):
    help = "Re-embed every fact and event in batches (resumable), e.g. after switching embedders"

    def add_arguments(self, parser):
        parser.add_argument(
            "--provider",
            choices=PROVIDERS,
            help="default: HAKI_EMBED_PROVIDER; the provider's other settings come from the environment",
        )
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
        parser.add_argument(
            "--restart", action="store_true", help="start a new pass even if one with this embedder finished"
        )

    def handle(self, *args, provider, batch_size, restart, **options):
        if not 1 <= batch_size <= 10_000:
            raise CommandError("--batch-size must be between 1 and 10000")
        err = self.stderr._out
        try:
            embedder = get_embedder(provider)
            check_dimension(embedder)
            with single_run():
                run, resumed = reembed_start(embedder=embedder, restart=restart)
                with_what = f"{run.provider} ({run.model})" if run.model else run.provider
                if run.finished_at is not None:
                    self.stdout.write(
                        f"nothing to do: run {run.pk} re-embedded every fact, event and procedure with {with_what} "
                        f"at {run.finished_at:%Y-%m-%d %H:%M}Z (--restart to do it again)"
                    )
                    return
                if resumed:
                    self.stderr.write(
                        f"resuming run {run.pk}: {run.facts_embedded} facts, {run.events_embedded} "
                        f"events and {run.procedures_embedded} procedures already done"
                    )
                with tqdm(
                    total=reembed_remaining(run), unit="row", desc="reembed", file=err, disable=not err.isatty()
                ) as bar:
                    for done in reembed_batches(run=run, embedder=embedder, batch_size=batch_size):
                        bar.update(done)
        except ReembedRefused as exc:
            raise CommandError(str(exc)) from exc
        except EmbedderUnavailable as exc:
            raise CommandError(f"{exc}; rerun the same command to continue where it stopped") from exc
        self.stdout.write(
            f"run {run.pk}: re-embedded {run.facts_embedded} facts, {run.events_embedded} events and "
            f"{run.procedures_embedded} procedures with {with_what}"
        )
