"""The trace page's "Replay" buttons: traces' admin (traces/admin.py) extended with the replay this app runs."""

from __future__ import annotations

from django.contrib import admin

from context.replay import ReplayRefused, context_replay
from traces import admin as traces_admin
from traces.models import Trace


class TraceAdmin(traces_admin.TraceAdmin):
    can_replay = True

    def replay(self, *, trace: Trace, as_of: str) -> dict:
        try:
            return context_replay(trace=trace, as_of=as_of, overrides={})
        except ReplayRefused as exc:  # a replay itself, or its scope erased meanwhile
            return {"error": str(exc)}


admin.site.unregister(Trace)
admin.site.register(Trace, TraceAdmin)
