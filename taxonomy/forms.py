"""Forms of the taxonomy evolution pages; node choices come from the project's pinned version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from taxonomy.models import TaxonomyNode, TaxonomyVersion

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

Level = TaxonomyNode.Level


class NodeChoiceField(forms.ModelChoiceField):
    """A choice of taxonomy node, shown as its code and name ("A.1 Model")."""

    def label_from_instance(self, obj: TaxonomyNode) -> str:
        return f"{obj.code} {obj.name}"


def _node_field(
    version: TaxonomyVersion, levels: tuple[int, ...], label: StrOrPromise, required: bool = True
) -> NodeChoiceField:
    return NodeChoiceField(
        queryset=version.nodes.filter(level__in=levels).order_by("level", "code"),
        label=label,
        required=required,
        to_field_name="code",
    )


class ProposalForm(forms.Form):
    parent = forms.ModelChoiceField(queryset=TaxonomyNode.objects.none(), to_field_name="code")
    name = forms.CharField(max_length=300, label=_("Name"))
    description = forms.CharField(widget=forms.Textarea, required=False, label=_("Description"))
    issue_urls = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        label=_("Issues that motivated it"),
        help_text=_("One issue URL per line, from this project."),
    )

    def __init__(self, version: TaxonomyVersion, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["parent"] = _node_field(
            version,
            (Level.TYPE, Level.THEME),
            _("Parent (a type for a theme, a theme for a sub-theme)"),
        )


class RejectForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), label=_("Reason"))


class EditForm(forms.Form):
    OPERATIONS = [
        ("rename", _("Rename or redescribe a node")),
        ("move", _("Move a node under another parent")),
        ("merge", _("Merge a node into another")),
        ("split", _("Split a new node off a node")),
        ("add", _("Add a node")),
    ]
    operation = forms.ChoiceField(choices=OPERATIONS, label=_("Operation"))
    based_on = forms.IntegerField(widget=forms.HiddenInput)
    node = forms.ModelChoiceField(queryset=TaxonomyNode.objects.none(), to_field_name="code")
    other = forms.ModelChoiceField(
        queryset=TaxonomyNode.objects.none(),
        to_field_name="code",
        required=False,
        label=_("Target or new parent (merge, move)"),
    )
    name = forms.CharField(max_length=300, required=False, label=_("Name (rename, split, add)"))
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, label=_("Description")
    )
    details = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label=_("Details that go to the new node (split; one per line)"),
    )

    def __init__(self, version: TaxonomyVersion, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["node"] = _node_field(version, (1, 2, 3), _("Node (for add: the parent)"))
        self.fields["other"] = _node_field(
            version, (1, 2, 3), _("Target or new parent (merge, move)"), required=False
        )
        self.fields["based_on"].initial = version.pk

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        op = data.get("operation")
        if op in ("move", "merge") and not data.get("other"):
            self.add_error("other", gettext("%(operation)s needs a target") % {"operation": op})
        if op in ("rename", "split", "add") and not (data.get("name") or "").strip():
            self.add_error("name", gettext("%(operation)s needs a name") % {"operation": op})
        return data


class ImportForm(forms.Form):
    file = forms.FileField(
        label=_("Taxonomy JSON file"),
        widget=forms.ClearableFileInput(attrs={"accept": ".json,application/json"}),
    )


class MoveDetailForm(forms.Form):
    entry = forms.IntegerField(widget=forms.HiddenInput)
    node = forms.ModelChoiceField(queryset=TaxonomyNode.objects.none(), to_field_name="code")

    def __init__(self, version: TaxonomyVersion, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["node"] = _node_field(version, (Level.SUB_THEME,), _("Move to"))
        # Shown without its <label> (one per summary group): the select names itself.
        self.fields["node"].widget.attrs["aria-label"] = _("Move to sub-theme")
