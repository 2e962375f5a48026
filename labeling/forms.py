"""Forms of the lead's pages: project settings, the scope, and the actions on a disputed issue.

Views validate with these and call `labeling.setup` / `labeling.resolution`; the services check
again what only they can know (e.g. that K is not below the annotations an issue already has).
"""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms

from annotator.models import Project
from ingest.models import Issue, Repository
from labeling import resolution
from labeling.resolution import MAX_MESSAGE
from labeling.setup import MAX_ANNOTATIONS_PER_ISSUE, Scope
from lib.inputlimits import integer_range, row_id


def first_error(form: forms.BaseForm) -> str:
    """ "field: message" of the form's first error, for a one-line flash message."""
    for name, errors in form.errors.items():
        return f"{name}: {errors[0]}" if name != "__all__" else str(errors[0])
    return ""


def _range_messages(text: str) -> dict[str, str]:
    return {"min_value": text, "max_value": text, "invalid": text, "required": text}


class SettingsForm(forms.Form):
    annotations_per_issue = forms.IntegerField(
        min_value=1,
        max_value=MAX_ANNOTATIONS_PER_ISSUE,
        error_messages=_range_messages(f"between 1 and {MAX_ANNOTATIONS_PER_ISSUE}"),
    )
    resolution_policy = forms.ChoiceField(choices=Project.Policy.choices)
    majority_threshold = forms.FloatField(min_value=0.5, max_value=1)
    # The stopping rule; left out, each keeps its value (`setup.configure` checks min labels
    # and the lead against K).
    stopping_rule = forms.ChoiceField(
        choices=Project.StoppingRule.choices,
        required=False,
        error_messages={"invalid_choice": "must be one of " + ", ".join(Project.StoppingRule)},
    )
    min_labels = forms.IntegerField(
        min_value=1,
        max_value=MAX_ANNOTATIONS_PER_ISSUE,
        required=False,
        error_messages=_range_messages("a whole number from 1 to K"),
    )
    lead_margin = forms.IntegerField(
        min_value=1,
        max_value=MAX_ANNOTATIONS_PER_ISSUE,
        required=False,
        error_messages=_range_messages("a whole number from 1 to K"),
    )
    needs_more_first = forms.TypedChoiceField(
        choices=[("1", "issues that need one more label first"), ("0", "queue order")],
        coerce=lambda value: value == "1",
        empty_value=None,
        required=False,
    )

    def configure_kwargs(self) -> dict:
        """The stopping rule's settings for `setup.configure` (None: keep as it is)."""
        data = self.cleaned_data
        return {
            "stopping_rule": data.get("stopping_rule") or None,
            "min_labels": data.get("min_labels"),
            "lead_margin": data.get("lead_margin"),
            "needs_more_first": data.get("needs_more_first"),
        }


class ScopeForm(forms.Form):
    """Which issues the project holds. Only repositories the lead may manage (or that the
    project already holds) can be chosen: a scope is what gives a lead the right to sync a
    repository, so it must not be a way to take over any repository."""

    repositories = forms.ModelMultipleChoiceField(
        queryset=Repository.objects.none(), required=False
    )
    filter_statuses = forms.MultipleChoiceField(choices=Issue.FilterStatus.choices, required=False)
    created_from = forms.DateField(required=False)
    created_to = forms.DateField(required=False)

    def __init__(self, *args, repositories=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["repositories"]
        if repositories is not None and isinstance(field, forms.ModelMultipleChoiceField):
            field.queryset = repositories
        # Both are stored on the project: each must fit its column.
        for name, column in (("pilot_size", "pilot_size"), ("seed", "queue_seed")):
            low, high = integer_range(Project, column)
            # Left out, they are 0 (no pilot, the default shuffle).
            self.fields[name] = forms.IntegerField(
                min_value=low,
                max_value=high,
                required=False,
                error_messages=_range_messages(f"a whole number from {low} to {high}"),
            )

    def clean(self):
        super().clean()
        data = self.cleaned_data
        start, end = data.get("created_from"), data.get("created_to")
        if start and end and start > end:
            self.add_error("created_to", "ends before it starts")
        for name in ("pilot_size", "seed"):
            if name in data and data[name] is None:
                data[name] = 0
        return data

    def scope(self) -> Scope:
        data = self.cleaned_data
        return Scope(
            repository_ids=sorted(r.pk for r in data["repositories"]),
            filter_statuses=list(data["filter_statuses"]),
            created_from=data["created_from"],
            created_to=data["created_to"],
        )


class MessageForm(forms.Form):
    body = forms.CharField(max_length=MAX_MESSAGE)


class ReopenForm(forms.Form):
    note = forms.CharField(max_length=MAX_MESSAGE, required=False)


class ResolveForm(forms.Form):
    """The lead's final label: one of the annotations ("source" is its id) or a new label
    (source "new", with the label fields parsed by `submission.parse_label`)."""

    source = forms.CharField(max_length=20, initial="new")
    method = forms.ChoiceField(
        choices=[(m, m) for m in resolution.LEAD_METHODS],
        error_messages={"invalid_choice": "must be one of " + ", ".join(resolution.LEAD_METHODS)},
    )
    note = forms.CharField(max_length=MAX_MESSAGE, required=False)


class QueueFilterForm(forms.Form):
    """The disagreement queue's filters, read from the query string by the queue and by the
    resolve page (whose "Record and next" goes on in the same order and filters). A value that
    is not one of the choices is ignored, as a filter left empty."""

    repository = forms.CharField(required=False)
    type = forms.CharField(required=False)
    level = forms.CharField(required=False)
    sort = forms.CharField(required=False)

    SORTS = ("split", "position")

    def values(self) -> dict[str, str]:
        """The filters as the queue's form shows them (strings; "" for none)."""
        data = self.cleaned_data if self.is_valid() else {}
        level = data.get("level") or ""
        sort = data.get("sort") or ""
        return {
            "repository": str(row_id(data.get("repository")) or ""),
            "type": str(row_id(data.get("type")) or ""),
            "level": level if level in resolution.LEVELS else "",
            "sort": sort if sort in self.SORTS else "split",
        }

    def queue(self, project: Project):
        """The disagreement queue under these filters (`resolution.disagreement_queue`)."""
        values = self.values()
        return resolution.disagreement_queue(
            project,
            repository_id=row_id(values["repository"]),
            type_id=row_id(values["type"]),
            level=values["level"],
            sort=values["sort"],
        )

    def query_string(self) -> str:
        """The filters as a query string (without "?"), for links that keep them."""
        values = self.values()
        if values["sort"] == self.SORTS[0]:
            del values["sort"]  # the default order needs no mention
        return urlencode({k: v for k, v in values.items() if v})
