"""Forms of the dataset pages."""

from __future__ import annotations

from django import forms


class ReleaseForm(forms.Form):
    version = forms.CharField(
        max_length=40,
        help_text="Semantic version MAJOR.MINOR.PATCH, greater than the latest release.",
        widget=forms.TextInput(attrs={"placeholder": "1.0.0", "autocomplete": "off"}),
    )
    note = forms.CharField(
        required=False,
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="What this release is and why (Markdown); it goes into the datasheet.",
    )


class CompareForm(forms.Form):
    a = forms.CharField(max_length=40)
    b = forms.CharField(max_length=40)
