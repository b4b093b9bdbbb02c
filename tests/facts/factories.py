import factory
from django.utils import timezone

from facts.models import Event, Fact
from facts.text import text_hash
from hakimem.embeddings import get_embedder
from tests.conftest import PROJECT


class FactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Fact

    project_id = PROJECT
    subject_id = "alice"
    text = factory.Sequence(lambda n: f"Alice noted item number {n} in her diary.")
    text_hash = factory.LazyAttribute(lambda o: text_hash(o.text))
    embedding = factory.LazyAttribute(lambda o: get_embedder().embed([o.text])[0])
    recorded_from = factory.LazyFunction(timezone.now)
    last_confirmed_at = factory.LazyAttribute(lambda o: o.recorded_from)


class EventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Event

    project_id = PROJECT
    subject_id = "alice"
    text = factory.Sequence(lambda n: f"Alice went to event number {n}.")
    occurred_at = factory.LazyFunction(timezone.now)
    embedding = factory.LazyAttribute(lambda o: get_embedder().embed([o.text])[0])
