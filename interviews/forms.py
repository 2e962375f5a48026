"""Forms of the interview page."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from interviews.models import Participant
from taxonomy.models import TaxonomyVersion


class CodebookImportForm(forms.Form):
    file = forms.FileField(
        label=_("Codebook CSV"), widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"})
    )
    replace = forms.BooleanField(required=False, label=_("Replace the current codebook"))


class RankingForm(forms.Form):
    participant = forms.CharField(
        max_length=50, label=_("Participant"), help_text=_("Code, e.g. U3; created if new.")
    )
    kind = forms.ChoiceField(
        choices=Participant.Kind.choices, required=False, label=_("Type (for a new participant)")
    )
    experience = forms.CharField(
        max_length=200, required=False, label=_("Experience level (for a new participant)")
    )
    issue_type = forms.ChoiceField(choices=(), label=_("Issue type"))
    themes = forms.CharField(
        max_length=500,
        label=_("Themes in order of priority"),
        help_text=_("Codes, highest priority first: a top three (C.2, C.3, C.1) or a full order."),
    )

    def __init__(self, version: TaxonomyVersion, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["issue_type"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [
            (t.code, f"{t.code} {t.name}") for t in version.types().order_by("position")
        ]
