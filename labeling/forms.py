"""Forms of the lead's pages: project settings, the scope, the guideline, the actions on a
disputed issue, and the filters of the disagreement queue and of the issue list (a new project's
forms, which build on the first two, are `front.forms`).

Views validate with these and call `labeling.setup` / `labeling.resolution`; the services check
again what only they can know (e.g. that K is not below the annotations an issue already has).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django import forms
from django.db.models import QuerySet
from django.http import QueryDict
from django.utils.functional import lazy
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from annotator.models import Project
from ingest.models import Issue, Repository
from labeling import guideline, issue_list, resolution, submission
from labeling.labels import Label
from labeling.models import ProjectIssue
from labeling.resolution import MAX_MESSAGE
from labeling.setup import MAX_ANNOTATIONS_PER_ISSUE, Scope, ScopeChange, SettingsChange
from lib.inputlimits import integer_range, row_id
from lib.refusal import Refusal
from taxonomy.codes import FALSE_POSITIVE
from taxonomy.models import TaxonomyNode

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


def _lazy_format(message: str, **params: object) -> StrOrPromise:
    """`message` (marked with `gettext_noop`) translated and filled in when it is shown, in the
    language active then: error messages and choices are made once, at import, in English."""
    return lazy(lambda: gettext(message) % params, str)()


def first_error(form: forms.BaseForm) -> str:
    """ "field: message" of the form's first error, for a one-line flash message."""
    for name, errors in form.errors.items():
        return f"{name}: {errors[0]}" if name != "__all__" else str(errors[0])
    return ""


def _check_date_range(form: forms.Form) -> None:
    """A `created_from`..`created_to` window (scope, issue list) may not end before it starts."""
    start, end = form.cleaned_data.get("created_from"), form.cleaned_data.get("created_to")
    if start and end and start > end:
        form.add_error("created_to", gettext("ends before it starts"))


def _range_messages(text: StrOrPromise) -> dict[str, StrOrPromise]:
    # (`text` may be lazy: it is read when the error is shown.)
    return {"min_value": text, "max_value": text, "invalid": text, "required": text}


class SettingsForm(forms.Form):
    annotations_per_issue = forms.IntegerField(
        label=_("Annotations per issue"),
        min_value=1,
        max_value=MAX_ANNOTATIONS_PER_ISSUE,
        error_messages=_range_messages(
            _lazy_format(gettext_noop("between 1 and %(most)s"), most=MAX_ANNOTATIONS_PER_ISSUE)
        ),
    )
    resolution_policy = forms.ChoiceField(
        label=_("Resolution policy"), choices=Project.Policy.choices
    )
    majority_threshold = forms.FloatField(label=_("Majority threshold"), min_value=0.5, max_value=1)
    # The stopping rule; left out, each keeps its value (`setup.configure` checks min labels
    # and the lead against K).
    stopping_rule = forms.ChoiceField(
        label=_("Stopping rule"),
        choices=Project.StoppingRule.choices,
        required=False,
        error_messages={
            "invalid_choice": _lazy_format(
                gettext_noop("must be one of %(choices)s"),
                choices=", ".join(Project.StoppingRule),
            )
        },
    )
    min_labels = forms.IntegerField(
        label=_("Minimum labels"),
        min_value=1,
        max_value=MAX_ANNOTATIONS_PER_ISSUE,
        required=False,
        error_messages=_range_messages(_("a whole number from 1 to K")),
    )
    lead_margin = forms.IntegerField(
        label=_("Lead margin"),
        min_value=1,
        max_value=MAX_ANNOTATIONS_PER_ISSUE,
        required=False,
        error_messages=_range_messages(_("a whole number from 1 to K")),
    )
    needs_more_first = forms.TypedChoiceField(
        label=_("Queue order"),
        choices=[("1", _("issues that need one more label first")), ("0", _("queue order"))],
        coerce=lambda value: value == "1",
        empty_value=None,
        required=False,
    )

    # Taxonomy descriptions as written, or in the reader's language where the taxonomy has
    # them (`taxonomy.texts`); left out, it keeps its value.
    translated_descriptions = forms.TypedChoiceField(
        choices=[
            ("0", _("as the project wrote them")),
            ("1", _("in the reader's language when available")),
        ],
        coerce=lambda value: value == "1",
        empty_value=None,
        required=False,
    )

    def configure_kwargs(self) -> dict:
        """The stopping rule's and the descriptions' settings for `setup.configure` (None:
        keep as it is)."""
        data = self.cleaned_data
        return {
            "stopping_rule": data.get("stopping_rule") or None,
            "min_labels": data.get("min_labels"),
            "lead_margin": data.get("lead_margin"),
            "needs_more_first": data.get("needs_more_first"),
            "translated_descriptions": data.get("translated_descriptions"),
        }

    def setup_action(self) -> SettingsChange:
        """The settings action that `setup.apply_setup_action` carries out (once valid)."""
        data = self.cleaned_data
        return SettingsChange(
            data["annotations_per_issue"],
            data["resolution_policy"],
            data["majority_threshold"],
            self.configure_kwargs(),
        )


class ScopeForm(forms.Form):
    """Which issues the project holds. Only repositories the lead may manage (or that the
    project already holds) can be chosen: a scope is what gives a lead the right to sync a
    repository, so it must not be a way to take over any repository. For the same reason no
    repository ticked means every repository only for an ingest admin (`every_repository`);
    for anyone else it means the repositories offered (`chosen_scope`)."""

    repositories = forms.ModelMultipleChoiceField(
        label=_("Repositories"), queryset=Repository.objects.none(), required=False
    )
    filter_statuses = forms.MultipleChoiceField(choices=Issue.FilterStatus.choices, required=False)
    created_from = forms.DateField(required=False)
    created_to = forms.DateField(required=False)

    def __init__(
        self,
        *args: Any,
        repositories: QuerySet[Repository] | None = None,
        every_repository: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.every_repository = every_repository
        self.offered = repositories if repositories is not None else Repository.objects.none()
        field = self.fields["repositories"]
        if repositories is not None and isinstance(field, forms.ModelMultipleChoiceField):
            field.queryset = repositories
        # Both are stored on the project: each must fit its column.
        labels = {"pilot_size": gettext("Pilot sample size"), "seed": gettext("Seed")}
        for name, column in (("pilot_size", "pilot_size"), ("seed", "queue_seed")):
            low, high = integer_range(Project, column)
            # Left out, they are 0 (no pilot, the default shuffle).
            self.fields[name] = forms.IntegerField(
                label=labels[name],
                min_value=low,
                max_value=high,
                required=False,
                error_messages=_range_messages(
                    gettext("a whole number from %(low)s to %(high)s") % {"low": low, "high": high}
                ),
            )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        _check_date_range(self)
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

    def chosen_scope(self) -> Scope | None:
        """The scope to apply; None when nothing may be chosen (no repository offered)."""
        scope = self.scope()
        if scope.repository_ids or self.every_repository:
            return scope
        offered = sorted(self.offered.values_list("pk", flat=True))
        if not offered:
            return None
        scope.repository_ids = offered
        return scope

    def setup_action(self) -> ScopeChange:
        """The scope action that `setup.apply_setup_action` carries out (once valid)."""
        data = self.cleaned_data
        return ScopeChange(self.chosen_scope(), data["pilot_size"], data["seed"])


def setup_form(
    data: QueryDict, *, repositories: QuerySet[Repository], every_repository: bool
) -> ScopeForm | SettingsForm:
    """The form of the setup page's posted action: the scope's (`action` "scope"), else the
    settings'. Valid, its `setup_action()` goes to `setup.apply_setup_action`."""
    if data.get("action") == "scope":
        return ScopeForm(data, repositories=repositories, every_repository=every_repository)
    return SettingsForm(data)


class LeadActionForm(forms.Form):
    """One of the lead's actions on a disputed issue (the resolve page's three forms): post a
    message (`body`), reopen a final label (`note`), or record the final label (`source`: an
    annotation's id or "new", with the label fields; `method`, which has no default; `note`).

    Valid, `lead_action()` is the `resolution.LeadAction` that `resolution.apply_lead_action`
    carries out; the chosen annotation is looked up there, within the issue. An error names its
    field (the label's own fields for a new label, through `submission.parse_label`).
    """

    ACTIONS = ("message", "reopen", "resolve")

    action = forms.ChoiceField(
        choices=[(a, a) for a in ACTIONS],
        error_messages={"invalid_choice": _("unknown action")},
    )
    body = forms.CharField(max_length=MAX_MESSAGE, required=False)
    note = forms.CharField(max_length=MAX_MESSAGE, required=False)
    source = forms.CharField(max_length=20, required=False, initial="new")
    method = forms.CharField(max_length=40, required=False)

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        self._label: Label | None = None

    def clean(self) -> dict:
        data = super().clean() or {}
        action = data.get("action")
        if action == "message" and not (data.get("body") or "").strip():
            self.add_error("body", gettext("write something first."))
        elif action == "resolve":
            # No default: the lead says how the label was decided (the issue's own part of
            # the rule, a discussion for "consensus", is `resolution.resolve`'s).
            refusal = resolution.method_refusal(data.get("method") or "")
            if refusal:
                self.add_error("method", refusal)
            source = data.get("source") or "new"
            if source == "new":
                try:
                    self._label = submission.parse_label(self.project, self.data)
                except Refusal as exc:
                    self.add_error(None, str(exc))
            elif row_id(source) is None:
                self.add_error("source", gettext("not an annotation of this issue"))
        return data

    def lead_action(self) -> resolution.LeadAction:
        data = self.cleaned_data
        action = data["action"]
        if action == "message":
            return resolution.LeadAction(action, text=data["body"])
        if action == "reopen":
            return resolution.LeadAction(action, text=data["note"])
        source = data.get("source") or "new"
        return resolution.LeadAction(
            action,
            text=data["note"],
            method=data["method"],
            annotation_id=None if source == "new" else row_id(source),
            label=self._label,
        )


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

    def queue(self, project: Project) -> QuerySet[ProjectIssue]:
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


class _MarkdownField(forms.CharField):
    """Text whose line ends count once: a browser sends each as "\\r\\n", so a text that fits
    the textarea's `maxlength` would otherwise fail the same limit here."""

    def to_python(self, value: Any | None) -> str:
        return guideline.normalise(super().to_python(value) or "")


class GuidelineForm(forms.Form):
    """A lead's project guideline (Markdown)."""

    guideline = _MarkdownField(
        label=_("Guideline"),
        required=False,
        max_length=guideline.MAX_GUIDELINE_CHARS,
        widget=forms.Textarea(attrs={"rows": 18}),
        help_text=_("Markdown. Annotators see it above every issue and in the Keys (?) dialog."),
        error_messages={
            # %(show_value)s is the validator's: filled in after this message is.
            "max_length": _lazy_format(
                gettext_noop(
                    "The guideline is too long: at most %(most)s characters (it has"
                    " %%(show_value)s)."
                ),
                most=f"{guideline.MAX_GUIDELINE_CHARS:,}",
            )
        },
    )


def _choice_messages(field: str) -> dict[str, StrOrPromise]:
    # The bad value is not echoed: it can be anything, of any length.
    return {
        "invalid_choice": _lazy_format(
            gettext_noop("not one of the %(field)s choices"), field=field
        )
    }


class IssueListForm(forms.Form):
    """The issue list's filters, search and sort, read from the query string.

    Unlike the queue's filters, a value that is not one of the choices is an error naming the
    field (the page answers 400 and shows it): a researcher who mistypes a filter must not read
    an unfiltered list as the filtered one. The choices are the project's (its repositories,
    its taxonomy's types and themes), hence `project`.
    """

    q = forms.CharField(
        required=False,
        max_length=issue_list.MAX_QUERY_LENGTH,
        error_messages={
            "max_length": _lazy_format(
                gettext_noop("at most %(most)s characters"), most=issue_list.MAX_QUERY_LENGTH
            )
        },
    )
    status = forms.ChoiceField(
        required=False,
        choices=[("", _("any status")), *issue_list.STATUS_NAMES.items()],
        error_messages=_choice_messages("status"),
    )
    repository = forms.ChoiceField(required=False, error_messages=_choice_messages("repository"))
    final_type = forms.ChoiceField(required=False, error_messages=_choice_messages("type"))
    theme = forms.ChoiceField(required=False, error_messages=_choice_messages("theme"))
    level = forms.ChoiceField(
        required=False,
        choices=[("", _("any level")), *issue_list.LEVEL_NAMES.items()],
        error_messages=_choice_messages("level"),
    )
    created_from = forms.DateField(
        required=False, error_messages={"invalid": _("a date such as 2024-01-31")}
    )
    created_to = forms.DateField(
        required=False, error_messages={"invalid": _("a date such as 2024-01-31")}
    )
    sort = forms.ChoiceField(
        required=False,
        choices=list(issue_list.SORTS.items()),
        error_messages=_choice_messages("sort"),
    )
    order = forms.ChoiceField(
        required=False,
        choices=[("desc", _("descending")), ("asc", _("ascending"))],
        error_messages=_choice_messages("order"),
    )

    DEFAULTS = {"sort": "created", "order": "desc"}

    def __init__(self, data: QueryDict, *, project: Project) -> None:
        super().__init__(data)
        repositories = Repository.objects.filter(issues__project_issues__project=project)
        self._set_choices(
            "repository",
            gettext("any repository"),
            [(str(r.pk), r.full_name) for r in repositories.distinct().order_by("owner", "name")],
        )
        nodes = TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id).order_by(
            "position", "code"
        )
        types = nodes.filter(level=TaxonomyNode.Level.TYPE)
        themes = nodes.filter(level=TaxonomyNode.Level.THEME)
        self._set_choices(
            "final_type",
            gettext("any final label"),
            [
                (FALSE_POSITIVE, gettext("FP not LLM-related")),
                *((t.code, f"{t.code} {t.name}") for t in types),
            ],
        )
        self._set_choices(
            "theme", gettext("any theme"), [(t.code, f"{t.code} {t.name}") for t in themes]
        )

    def _set_choices(self, name: str, empty: str, choices: list[tuple[str, str]]) -> None:
        field = self.fields[name]
        if isinstance(field, forms.ChoiceField):
            field.choices = [("", empty), *choices]

    def clean_q(self) -> str:
        q = self.cleaned_data["q"].strip()
        try:
            issue_list.read_search(q)
        except issue_list.SearchRefused as refused:
            raise forms.ValidationError(str(refused)) from None
        return q

    def clean(self) -> dict[str, Any]:
        super().clean()
        _check_date_range(self)
        return self.cleaned_data

    def filters(self) -> issue_list.IssueFilters:
        """The validated filters (call after `is_valid()`)."""
        data = self.cleaned_data
        return issue_list.IssueFilters(
            status=data["status"],
            repository_id=int(data["repository"]) if data["repository"] else None,
            final_type=data["final_type"],
            theme=data["theme"],
            level=data["level"],
            created_from=data["created_from"],
            created_to=data["created_to"],
            q=data["q"],
            sort=data["sort"] or self.DEFAULTS["sort"],
            descending=(data["order"] or self.DEFAULTS["order"]) == "desc",
        )

    def values(self) -> dict[str, str]:
        """The form's values as the page shows them (strings, defaults filled in): the valid
        values, or what was typed when a field is in error (shown again to be corrected)."""
        data = self.cleaned_data if self.is_valid() else {n: self.data.get(n) for n in self.fields}
        values = {name: str(data.get(name) or "") for name in self.fields}
        for name, default in self.DEFAULTS.items():
            values[name] = values[name] or default
        return values

    def query_string(self) -> str:
        """The search, filters and sort as a query string (without "?" or the page), for page
        links that keep them; defaults are left out."""
        values = self.values()
        return urlencode({k: v for k, v in values.items() if v and v != self.DEFAULTS.get(k)})
