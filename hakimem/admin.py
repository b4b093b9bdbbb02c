from django.contrib import admin

from hakimem.admin_filters import StaffProjectsMixin
from hakimem.models import ApiKey, StaffProjectAccess


@admin.register(ApiKey)
class ApiKeyAdmin(StaffProjectsMixin, admin.ModelAdmin):
    list_display = ("prefix", "project_id", "label", "created_at", "revoked_at")
    list_filter = ("project_id",)
    readonly_fields = ("prefix", "key_hash", "created_at")


@admin.register(StaffProjectAccess)
class StaffProjectAccessAdmin(admin.ModelAdmin):
    """Who is limited to which projects. A staff user without any row here sees every project."""

    list_display = ("user", "project_id")
    list_filter = ("project_id",)
    search_fields = ("user__username", "project_id")
    autocomplete_fields = ("user",)
