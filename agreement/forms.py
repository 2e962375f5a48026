"""Forms of the agreement pages: the label audit's rows, the policy simulator's parameters and
how Table I counts."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agreement.simulation import MAX_K, MAX_ORDERS
from agreement.table_one import COUNT_ISSUES, COUNT_ROWS
from annotator.models import Project
from labeling.models import MachineRater

# The audit page lists at most this many rows (the command lists any number).
MAX_AUDIT_ROWS = 1000
DEFAULT_AUDIT_ROWS = 50
MAX_LEADS = 6


class AuditForm(forms.Form):
    """The label audit page's query string: how many of the least likely finals to list."""

    top = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_AUDIT_ROWS, label=_("Rows, least likely first")
    )

    def rows(self) -> int:
        return self.cleaned_data.get("top") or DEFAULT_AUDIT_ROWS


class SimulatorForm(forms.Form):
    """The adaptive rule's settings to compare (lead values to draw) and the replay's size."""

    min_labels = forms.IntegerField(
        label=_("Minimum labels"), min_value=1, max_value=MAX_K, initial=2
    )
    leads = forms.CharField(
        label=_("Lead values"),
        initial="1, 2, 3",
        required=False,
        max_length=40,
        help_text=_(
            "Votes the leading theme must be ahead by, comma-separated; "
            "1, 2 and 3 are always drawn."
        ),
    )
    orders = forms.IntegerField(label=_("Orders"), min_value=1, max_value=MAX_ORDERS, initial=20)
    seed = forms.IntegerField(label=_("Seed"), min_value=0, max_value=2**31 - 1, initial=1)
    machine_rater = forms.ChoiceField(
        label=_("Enlist a machine rater"),
        required=False,
        help_text=_("Replay also with its confident labels as one vote."),
    )
    confidence = forms.FloatField(
        label=_("Machine confidence"),
        required=False,
        min_value=0.0,
        max_value=1.0,
        help_text=_("Its vote counts from this confidence (empty: the rater's threshold)."),
    )

    def __init__(self, *args: Any, project: Project | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = (
            MachineRater.objects.filter(project=project).values_list("name", flat=True)
            if project
            else []
        )
        field = self.fields["machine_rater"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", gettext("none")), *((name, name) for name in names)]

    def clean_leads(self) -> list[int]:
        parts = [p.strip() for p in self.cleaned_data["leads"].split(",") if p.strip()]
        if not all(p.isascii() and p.isdigit() for p in parts):  # not "²": int() refuses it
            raise forms.ValidationError(_("Give whole numbers separated by commas, e.g. 1, 2, 3."))
        values = {int(p) for p in parts}
        if len(values) > MAX_LEADS:
            raise forms.ValidationError(
                _("At most %(count)s lead values."), params={"count": MAX_LEADS}
            )
        if values and (min(values) < 1 or max(values) > 20):
            raise forms.ValidationError(_("Each lead value must be between 1 and 20."))
        return sorted(values | {1, 2, 3})


class TableOneForm(forms.Form):
    """Table I's query string (page and API): count issues (default) or published rows."""

    count = forms.ChoiceField(
        choices=[
            (COUNT_ISSUES, _("issues (each once)")),
            (COUNT_ROWS, _("rows of the published label files (as the paper)")),
        ],
        required=False,
        label=_("Count"),
    )

    def counting(self) -> str:
        return self.cleaned_data.get("count") or COUNT_ISSUES
