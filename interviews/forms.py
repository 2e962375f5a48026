"""Forms of the interview page."""

from __future__ import annotations

from django import forms

from interviews.models import Participant


class CodebookImportForm(forms.Form):
    file = forms.FileField(
        label="Codebook CSV", widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"})
    )
    replace = forms.BooleanField(required=False, label="Replace the current codebook")


class RankingForm(forms.Form):
    participant = forms.CharField(max_length=50, help_text="Code, e.g. U3; created if new.")
    kind = forms.ChoiceField(
        choices=Participant.Kind.choices, required=False, label="Type (for a new participant)"
    )
    experience = forms.CharField(
        max_length=200, required=False, label="Experience level (for a new participant)"
    )
    issue_type = forms.ChoiceField(choices=())
    themes = forms.CharField(
        max_length=500,
        label="Themes in order of priority",
        help_text="Codes, highest priority first: a top three (C.2, C.3, C.1) or a full order.",
    )

    def __init__(self, version, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["issue_type"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [
            (t.code, f"{t.code} {t.name}") for t in version.types().order_by("position")
        ]
