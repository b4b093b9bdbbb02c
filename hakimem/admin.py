from django.contrib import admin, messages

from hakimem.admin_filters import StaffProjectsMixin
from hakimem.models import ApiKey, StaffProjectAccess, staff_projects
from hakimem.services import api_key_revoke


@admin.register(ApiKey)
class ApiKeyAdmin(StaffProjectsMixin, admin.ModelAdmin):
    """Keys are made by `manage.py create_api_key` (api_key_create) and revoked by `manage.py revoke_api_key` or the
    action here (api_key_revoke): their rows are read only. An editable form let a staff user limited to one project
    move a key to another project, or clear revoked_at and bring a revoked key back."""

    list_display = ("prefix", "project_id", "label", "created_at", "revoked_at")
    list_filter = ("project_id",)
    fields = ("prefix", "project_id", "label", "created_at", "revoked_at")
    readonly_fields = fields
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_revoke_permission(self, request):
        return request.user.has_perm(f"{self.opts.app_label}.change_{self.opts.model_name}")

    @admin.action(description="Revoke the selected keys (refused from then on)", permissions=["revoke"])
    def revoke(self, request, queryset):
        # get_queryset's project limit holds: a key of another project cannot be selected into `queryset`
        revoked = 0
        for key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(key=key)
            self.log_change(request, key, "Revoked.")
            revoked += 1
        messages.success(request, f"{revoked} key{'s' * (revoked != 1)} revoked.")


@admin.register(StaffProjectAccess)
class StaffProjectAccessAdmin(StaffProjectsMixin, admin.ModelAdmin):
    """Who is limited to which projects. A staff user without any row here sees every project.

    A staff user limited to projects sees the rows of its projects and changes none: removing its own last row would
    lift its limit, and a row of its own for another project would widen it."""

    list_display = ("user", "project_id")
    list_filter = ("project_id",)
    search_fields = ("user__username", "project_id")
    autocomplete_fields = ("user",)

    def _unlimited(self, request) -> bool:
        return staff_projects(request.user) is None

    def has_add_permission(self, request):
        return self._unlimited(request) and super().has_add_permission(request)

    def has_change_permission(self, request, obj=None):
        return self._unlimited(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self._unlimited(request) and super().has_delete_permission(request, obj)
