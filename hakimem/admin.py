from django.contrib import admin

from hakimem.models import ApiKey


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "project_id", "label", "created_at", "revoked_at")
    list_filter = ("project_id",)
    readonly_fields = ("prefix", "key_hash", "created_at")
