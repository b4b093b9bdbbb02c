"""The stored vectors against the configured embedder: `manage.py migrate` (so `make run`) stops on a store another
embedder made (switched without `manage.py reembed`), and goes on while a reembed toward it runs."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.utils import timezone

from hakimem.embeddings import get_embedder
from portability import store_vectors
from portability.models import ReembedRun
from tests.facts.factories import EventFactory, FactFactory

pytestmark = pytest.mark.django_db


def another_models_vector():
    return get_embedder().embed(["a vector some other model made"])[0]


def run(provider="hashing", *, finished=True, **identity):
    embedder = get_embedder()
    return ReembedRun.objects.create(
        provider=provider,
        model=identity.get("model", embedder.model),
        dimension=identity.get("dimension", embedder.dim),
        started_at=timezone.now(),
        finished_at=timezone.now() if finished else None,
        facts_done=finished,
    )


def verdict() -> str:
    return store_vectors.store_vectors(get_embedder())


def test_an_empty_store_may_be_written_by_any_embedder():
    assert verdict() == store_vectors.EMPTY


def test_facts_embedded_by_the_configured_embedder_are_its_own():
    FactFactory(text="Alice grows tomatoes on her balcony.")
    assert verdict() == store_vectors.OK


def test_vectors_of_another_model_are_a_mismatch():
    FactFactory(text="Alice grows tomatoes on her balcony.", embedding=another_models_vector())
    assert verdict() == store_vectors.MISMATCH


def test_an_event_is_sampled_when_the_store_holds_no_fact():
    EventFactory(text="Alice planted a pear tree.", embedding=another_models_vector())
    assert verdict() == store_vectors.MISMATCH


def test_the_latest_finished_reembed_says_which_embedder_made_the_store():
    FactFactory(text="Alice grows tomatoes on her balcony.", embedding=another_models_vector())
    run("hashing")
    assert verdict() == store_vectors.OK  # the run's word, no sampling
    run("multilingual-e5-small", model="multilingual-e5-small-q4")
    assert verdict() == store_vectors.MISMATCH


def test_a_reembed_toward_the_configured_embedder_is_under_way():
    FactFactory(text="Alice grows tomatoes on her balcony.", embedding=another_models_vector())
    run("hashing", finished=False)
    assert verdict() == store_vectors.REEMBEDDING


def test_an_unfinished_reembed_toward_another_embedder_leaves_a_mixed_store():
    run("hashing")
    run("multilingual-e5-small", model="multilingual-e5-small-q4", finished=False)
    assert verdict() == store_vectors.MISMATCH


def check(*args):
    call_command("check", "--database", "default", *args, stdout=io.StringIO(), stderr=io.StringIO())


def test_the_database_check_stops_on_a_mismatch_and_names_the_way_out():
    check()  # an empty store passes
    FactFactory(text="Alice grows tomatoes on her balcony.", embedding=another_models_vector())
    with pytest.raises(SystemCheckError, match=r"portability.E001.*not made by the configured embedder, hashing"):
        check()
    run("hashing", finished=False)
    check()  # a reembed toward it is under way


def test_migrate_runs_the_check():
    FactFactory(text="Alice grows tomatoes on her balcony.", embedding=another_models_vector())
    quiet = {"stdout": io.StringIO(), "stderr": io.StringIO()}
    with pytest.raises(SystemCheckError, match="manage.py reembed"):  # as the command line runs it
        call_command("migrate", "--noinput", skip_checks=False, **quiet)
    call_command("migrate", "--noinput", skip_checks=True, **quiet)  # --skip-checks


def test_the_plain_check_does_not_read_the_database(django_assert_num_queries):
    FactFactory(text="Alice grows tomatoes on her balcony.", embedding=another_models_vector())
    with django_assert_num_queries(0):
        call_command("check", stdout=io.StringIO(), stderr=io.StringIO())
