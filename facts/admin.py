from django.contrib import admin

from facts.models import ConflictSet, Event, Fact


@admin.register(Fact)
class FactAdmin(admin.ModelAdmin):
    list_display = ("text", "project_id", "subject_id", "status", "kind", "category", "volatility", "recorded_from")
    list_filter = ("status", "kind", "volatility", "project_id")
    search_fields = ("text", "subject_id")
    exclude = ("embedding",)
    readonly_fields = ("text_hash", "recorded_from", "recorded_to", "last_confirmed_at", "superseded_by")


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ("text", "project_id", "subject_id", "occurred_at")
    list_filter = ("project_id",)
    search_fields = ("text", "subject_id")
    exclude = ("embedding",)


@admin.register(ConflictSet)
class ConflictSetAdmin(admin.ModelAdmin):
    list_display = ("id", "project_id", "subject_id", "status", "signal", "similarity", "opened_at")
    list_filter = ("status", "project_id")
    search_fields = ("subject_id",)
