import factory
from django.utils import timezone

from facts.models import ConflictMember, ConflictSet, Event, Fact, IdentityBlock, Procedure
from facts.procedures import procedure_embedding_text
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


class ConflictSetFactory(factory.django.DjangoModelFactory):
    """An open conflict set. Its members: the facts passed as `members`, else two new facts of its scope."""

    class Meta:
        model = ConflictSet
        skip_postgeneration_save = True

    project_id = PROJECT
    subject_id = "alice"
    signal = "negation"
    similarity = 0.9
    opened_at = factory.LazyFunction(timezone.now)

    @factory.post_generation
    def members(self, create, extracted, **kwargs):
        if not create:
            return
        facts = (
            extracted
            if extracted is not None
            else FactFactory.create_batch(2, project_id=self.project_id, subject_id=self.subject_id)
        )
        ConflictMember.objects.bulk_create(
            [
                ConflictMember(project_id=self.project_id, conflict_set=self, fact=fact, added_at=self.opened_at)
                for fact in facts
            ]
        )


class IdentityBlockFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = IdentityBlock

    project_id = PROJECT
    subject_id = "alice"
    name = factory.Sequence(lambda n: f"block-{n}")
    text = "Answer in short sentences."


class ProcedureFactory(factory.django.DjangoModelFactory):
    """A procedure of alice, embedded as procedure_create embeds one."""

    class Meta:
        model = Procedure

    project_id = PROJECT
    subject_id = "alice"
    title = factory.Sequence(lambda n: f"Procedure number {n}")
    text = "1. Open the checklist. 2. Follow it."
    embedding = factory.LazyAttribute(lambda o: get_embedder().embed([procedure_embedding_text(o.title, o.text)])[0])
