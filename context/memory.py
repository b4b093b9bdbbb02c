"""Where a context call's candidates come from: the store as it is now (Memory), or as it stood at a past call's
time (MemoryAsOf, for a replay as it was). The assembler asks either the same questions."""

from __future__ import annotations

from context import multi_hop, retrieval, retrieval_asof
from facts import selectors as fact_selectors
from hakimem.embeddings import EmbedderUnavailable
from traces import selectors as trace_selectors


class Memory:
    """The store as it is now (the hot path of context/retrieval.py)."""

    def __init__(self):
        self.entity_freq: dict[str, float] = {}  # what multi-hop read of each name's frequency, for the trace
        self.scope_facts: list | None = None  # every active fact of the scope, when the candidates hold them all

    def candidates(self, lookup, qvec, *, together: bool):
        """The call's facts and episodes. `together`: the call ranks them by the hybrid score alone, so one statement
        returns the best of both (retrieval.candidates_together); else one statement for a small scope's every row
        (retrieval.whole_scope_candidates), or one statement each."""
        if together and qvec is not None:
            facts, episodes, whole = retrieval.candidates_together(lookup, qvec=qvec)
            self.scope_facts = facts if whole else None
            return facts, episodes
        if qvec is not None and (scope := retrieval.whole_scope_candidates(lookup, qvec=qvec)) is not None:
            self.scope_facts = scope[0]
            return scope
        return self.facts(lookup, qvec), self.episodes(lookup, qvec)

    def facts(self, lookup, qvec):
        return retrieval.fact_candidates(lookup, qvec=qvec)

    def episodes(self, lookup, qvec):
        return retrieval.episode_candidates(lookup, qvec=qvec)

    def scope_state(self, lookup) -> retrieval.ScopeState:
        """Asked of a call that found no candidate at all only (why_empty)."""
        return retrieval.scope_state(lookup)

    def next_turns(self, lookup, question_ids) -> dict:
        """The turn after each of these episodes, by episode id (context/packing.py, neighbouring turns)."""
        return retrieval.next_turns(lookup, question_ids)

    def hop(self, lookup, entities, exclude_ids):
        if self.scope_facts is not None:  # what multi-hop could find is among the candidates already
            return multi_hop.multi_hop_within(
                lookup, entities=entities, scope_facts=self.scope_facts, exclude_ids=exclude_ids
            )
        return multi_hop.multi_hop_candidates(lookup, entities=entities, exclude_ids=exclude_ids)

    def name_freq(self, name: str, project_id: str | None = None) -> float:
        freq = retrieval.table_stats(retrieval.FACTS, project_id).term_freq.get(name, 0.0)
        self.entity_freq[name] = freq
        return freq

    # Tiered calls only.
    def procedures(self, lookup, qvec):
        return retrieval.procedure_candidates(lookup, qvec=qvec)

    def identity(self, project_id, subject_id):
        return fact_selectors.identity_blocks_for(project_id=project_id, subject_id=subject_id)

    def access(self, lookup, item_ids) -> dict:
        """How often each item was served lately, normalised to [0, 1] (traces.selectors)."""
        return trace_selectors.access_signal(
            project_id=lookup.project_id, subject_id=lookup.subject_id, item_ids=item_ids, now=lookup.now
        )


class MemoryAsOf(Memory):
    """The store as it stood at a past call's time (context/retrieval_asof.py), with what that call recorded
    of the things the store does not version: the names' frequencies and the volatility verdicts."""

    def __init__(self, *, verdicts: dict, entity_freq: dict, access: dict | None = None):
        super().__init__()
        self.verdicts = verdicts
        self.recorded_freq = entity_freq
        self.recorded_access = access or {}

    def candidates(self, lookup, qvec, *, together: bool):
        return self.facts(lookup, qvec), self.episodes(lookup, qvec)  # the as-of statements are one per table

    def facts(self, lookup, qvec):
        if qvec is None:  # the as-of statements have no full-text-only path: a replay as it was needs the vector
            raise EmbedderUnavailable("a replay as it was needs the query's vector")
        return retrieval_asof.fact_candidates_as_of(lookup, qvec=qvec, verdicts=self.verdicts)

    def episodes(self, lookup, qvec):
        return retrieval_asof.episode_candidates_as_of(lookup, qvec=qvec)

    def scope_state(self, lookup) -> retrieval.ScopeState:
        return retrieval_asof.scope_state_as_of(lookup)

    def next_turns(self, lookup, question_ids) -> dict:
        return retrieval_asof.next_turns_as_of(lookup, question_ids)

    def hop(self, lookup, entities, exclude_ids):
        return retrieval_asof.multi_hop_candidates_as_of(
            lookup, entities=entities, exclude_ids=exclude_ids, verdicts=self.verdicts
        )

    def name_freq(self, name: str, project_id: str | None = None) -> float:
        if name in self.recorded_freq:
            self.entity_freq[name] = self.recorded_freq[name]
            return self.recorded_freq[name]
        return super().name_freq(name, project_id)

    def access(self, lookup, item_ids) -> dict:
        # What the call read; an item it did not record had none. Identity blocks and procedures are not versioned:
        # a tiered replay as it was reads today's (README, Replay).
        return {i: self.recorded_access[str(i)] for i in item_ids if str(i) in self.recorded_access}
