"""List filters shared by the curators' admin pages (facts, conflict sets, traces).

Scope values are typed or picked from API keys rather than listed with SELECT DISTINCT: a subject list would
be as long as the user base, and DISTINCT over a million facts or traces on every page load is slow.
"""

from __future__ import annotations

from django.contrib import admin

from hakimem.models import ApiKey, staff_projects


def projects_visible(request, projects) -> list[str]:
    """`projects` less those the signed-in staff user is not given (StaffProjectAccess)."""
    allowed = staff_projects(request.user)
    return [p for p in projects if allowed is None or p in allowed]


class StaffProjectsMixin:
    """A ModelAdmin whose rows are a project's: a staff user limited to projects sees, opens and acts on only
    theirs (every view, list or page or action, goes through get_queryset). Row-level security holds the same
    line underneath (hakimem/rowsecurity.py)."""

    project_field = "project_id"

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        allowed = staff_projects(request.user)
        return queryset if allowed is None else queryset.filter(**{f"{self.project_field}__in": allowed})


class ProjectFilter(admin.SimpleListFilter):
    title = "project"
    parameter_name = "project_id"

    def lookups(self, request, model_admin):
        projects = set(ApiKey.objects.values_list("project_id", flat=True).distinct())
        if self.value():  # a project without a key (any more) can still be asked for by its id
            projects.add(self.value())
        return [(p, p) for p in sorted(projects_visible(request, projects))]

    def queryset(self, request, queryset):
        return queryset.filter(project_id=self.value()) if self.value() else queryset


class InputFilter(admin.ListFilter):
    """Values typed into a form (subject ids, dates). The form carries the page's other filters, the search
    and the ordering as hidden fields, so filtering here keeps them."""

    template = "admin/input_filter.html"
    parameters: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    input_type = "text"

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        for name in self.parameters:
            if name in params:
                value = params.pop(name)[-1].strip()
                if value:
                    self.used_parameters[name] = value

    def has_output(self):
        return True

    def expected_parameters(self):
        return list(self.parameters)

    def choices(self, changelist):
        kept = [
            (name, value)
            for name, values in changelist.filter_params.items()
            if name not in self.parameters
            for value in values
        ]
        yield {
            "inputs": [
                {"name": name, "label": label, "value": self.used_parameters.get(name, "")}
                for name, label in zip(self.parameters, self.labels)
            ],
            "hidden": kept,
            "input_type": self.input_type,
            "clear": changelist.get_query_string(remove=self.parameters) if self.used_parameters else None,
        }


class SubjectFilter(InputFilter):
    title = "subject"
    parameters = ("subject_id",)
    labels = ("subject id",)

    def queryset(self, request, queryset):
        subject = self.used_parameters.get("subject_id")
        return queryset.filter(subject_id=subject) if subject else queryset
