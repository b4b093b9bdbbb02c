"""The curators' admin for the memory store: facts, episodes, conflict sets, identity blocks and procedures.

Facts, episodes and conflict sets are never written through a model form: every field is read-only, and the two
things a curator does run the services the API runs (conflict_resolve for a conflict set, fact_retract for a
fact). Adding and deleting them are off: facts come from applications (POST /v1/facts, which embeds them) and
erasure is DELETE /v1/subjects. Identity blocks and procedures are written by people: their forms validate, and
the services the API calls save them (identity_block_create, procedure_update, ...).

A curator also asks why a fact was or was not served, and the answer is in traces.Decision, a layer above
this app: traces' admin (traces/admin.py) extends the fact and conflict set pages with their counts
(DecisionCountsMixin.decision_counts). So no module of facts imports traces.

One module per kind of page, each registering its own: facts.py (facts, events), conflicts.py, projects.py
(projects, consents), identity_and_procedures.py; base.py holds what they share.
"""

from facts.admin import conflicts, facts, identity_and_procedures, projects  # noqa: F401 (each registers its pages)
