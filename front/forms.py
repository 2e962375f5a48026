"""Forms of the new-project page: the project's name, taxonomy, K and policy, and members
(`NewProjectForm`), and its scope (`NewProjectScopeForm`). They build on the setup page's
`labeling.forms.SettingsForm` and `ScopeForm`; the page calls `labeling.setup.create_project`.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.utils.translation import gettext, pgettext
from django.utils.translation import gettext_lazy as _

from annotator.forms import MembersField, grantable_roles
from annotator.models import Project, Role
from annotator.permissions import may_add_existing_accounts
from ingest.models import Issue, Repository
from labeling.forms import ScopeForm, SettingsForm
from labeling.taxonomy_history import global_version, visible_to
from taxonomy.models import TaxonomyVersion


class _RepositoryChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Repository) -> str:
        group = f", {obj.group}" if obj.group else ""
        return f"{obj.full_name} ({obj.get_forge_display()}{group})"


class NewProjectScopeForm(ScopeForm):
    """The scope of a new project: the setup page's form with checkboxes and labels."""

    repositories = _RepositoryChoice(
        label=_("Repositories"),
        queryset=Repository.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    filter_statuses = forms.MultipleChoiceField(
        choices=Issue.FilterStatus.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("Keyword filter state"),
    )
    created_from = forms.DateField(
        required=False, widget=forms.DateInput(attrs={"type": "date"}), label=_("Opened from")
    )
    created_to = forms.DateField(
        required=False, widget=forms.DateInput(attrs={"type": "date"}), label=_("Opened until")
    )

    def __init__(
        self,
        *args: Any,
        repositories: QuerySet[Repository] | None,
        every_repository: bool,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            *args, repositories=repositories, every_repository=every_repository, **kwargs
        )
        for name in ("pilot_size", "seed"):
            self.fields[name].initial = 0
        self.fields["pilot_size"].help_text = gettext("Stratified by repository, labeled first.")
        self.fields["seed"].help_text = gettext("For the pilot sample and the queue shuffle.")


class _VersionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: TaxonomyVersion) -> str:
        origin = {
            "study": pgettext("taxonomy version origin", "the study's"),
            "imported": pgettext("taxonomy version origin", "imported"),
            "edited": pgettext("taxonomy version origin", "edited"),
        }.get(obj.origin, obj.origin)
        if obj.is_published:
            origin = gettext("%(origin)s, published") % {"origin": origin}
        return gettext("%(taxonomy)s v%(number)s (%(origin)s, %(date)s)") % {
            "taxonomy": obj.taxonomy.name,
            "number": obj.number,
            "origin": origin,
            "date": f"{obj.created_at:%Y-%m-%d}",
        }


class NewProjectForm(SettingsForm):
    """A new project's name, taxonomy, K and policy, and members (`setup.create_project`).
    The scope is a `NewProjectScopeForm` on the same page."""

    name = forms.CharField(label=_("Name"), max_length=Project._meta.get_field("name").max_length)
    description = forms.CharField(
        label=_("Description"),
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        max_length=20_000,
    )
    taxonomy_version = _VersionChoice(label=_("Taxonomy version"), queryset=None, empty_label=None)

    field_order = [
        "name",
        "description",
        "taxonomy_version",
        "annotations_per_issue",
        "resolution_policy",
        "majority_threshold",
        "members",
    ]

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        kwargs.setdefault(
            "initial",
            {
                "annotations_per_issue": Project._meta.get_field("annotations_per_issue").default,
                "resolution_policy": Project.Policy.LEAD_DECIDES,
                "majority_threshold": Project._meta.get_field("majority_threshold").default,
            },
        )
        newest = global_version()
        if newest is not None:
            kwargs["initial"].setdefault("taxonomy_version", newest.pk)
        super().__init__(*args, **kwargs)
        version = self.fields["taxonomy_version"]
        assert isinstance(version, forms.ModelChoiceField)
        version.queryset = (
            visible_to(user).select_related("taxonomy").order_by("taxonomy__name", "-number")
        )
        policy = self.fields["resolution_policy"]
        policy.widget = forms.RadioSelect(choices=Project.Policy.choices)
        if not may_add_existing_accounts(user):
            # Others invite members once the project exists (issue #20, I1): no box that adds
            # accounts without their consent, nor errors that tell which usernames exist.
            self.order_fields(self.field_order)
            return
        # The creator joins as lead, so gives what a lead may give (an admin: any role).
        roles = grantable_roles(Role.LEAD, user.is_superuser)
        self.fields["members"] = MembersField(
            label=gettext("Members"),
            roles=roles,
            creator=user,
            widget=forms.Textarea(attrs={"rows": 5, "placeholder": "ada annotator\notto lead"}),
            help_text=gettext(
                'One member a line: "username role", the role one of %(roles)s (annotator if left'
                " out). You join as lead."
            )
            % {"roles": ", ".join(value for value, _label in roles)},
        )
        self.order_fields(self.field_order)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if Project.objects.filter(name__iexact=name).exists():
            raise forms.ValidationError(
                gettext("A project named “%(name)s” already exists."), params={"name": name}
            )
        return name
