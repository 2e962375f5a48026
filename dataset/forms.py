"""Forms of the dataset pages."""

from __future__ import annotations

from django import forms

from dataset.models import RecallProbe
from dataset.recall import MAX_SAMPLE
from lib.inputlimits import integer_range


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


class RecallDrawForm(forms.Form):
    """A draw of recall probes: a sample size or a target margin of error, and a seed."""

    sample_size = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_SAMPLE,
        help_text="How many dropped issues to draw.",
    )
    margin = forms.FloatField(
        required=False,
        min_value=0.005,
        max_value=0.5,
        help_text="Or: the margin of error wanted on the share (0.05 = ±5 points at 95 %).",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # The seed is stored with each probe: it must fit the column.
        high = integer_range(RecallProbe, "seed")[1]
        self.fields["seed"] = forms.IntegerField(
            required=False,
            min_value=0,
            max_value=high,
            help_text="Empty: a random seed, recorded with the draw.",
        )

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if not self.errors and (data.get("sample_size") is None) == (data.get("margin") is None):
            self.add_error("sample_size", "give either a sample size or a margin of error")
        return data


class AddDroppedIssueForm(forms.Form):
    """A dropped issue a lead adds to the queue from the classifier's ranking."""

    issue = forms.IntegerField(min_value=1, max_value=2**63 - 1)
