"""Forms of the dataset pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile
from django.utils.translation import gettext_lazy as _

from agreement.forms import TableOneForm
from annotator.models import Project
from dataset.models import RecallProbe, UploadJob
from dataset.recall import MAX_SAMPLE
from ingest.models import Repository
from ingest.uploads import DEFAULT_SOURCE, source_problem
from labeling.models import MachineRater
from lib.inputlimits import column_limit, integer_range, upload_too_large


class ReleaseForm(forms.Form):
    version = forms.CharField(
        label=_("Version"),
        max_length=40,
        help_text=_("Semantic version MAJOR.MINOR.PATCH, greater than the latest release."),
        widget=forms.TextInput(attrs={"placeholder": "1.0.0", "autocomplete": "off"}),
    )
    note = forms.CharField(
        label=_("Note"),
        required=False,
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("What this release is and why (Markdown); it goes into the datasheet."),
    )
    # How the release is cited; the page prefills them from the project
    # (`dataset.releases.citation_defaults`), `create_release` checks them.
    title = forms.CharField(
        label=_("Title"),
        required=False,
        max_length=300,
        help_text=_("The dataset's title in CITATION.cff and the metadata (blank: the project's)."),
    )
    authors = forms.CharField(
        label=_("Authors"),
        required=False,
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_(
            "One per line: “Family, Given” for a person, or an organisation's name, "
            "optionally followed by “, ORCID”; several people on a line are separated by "
            "“;”. None leaves the citation incomplete."
        ),
    )
    licence = forms.CharField(
        label=_("Licence"),
        required=False,
        max_length=100,
        help_text=_("SPDX identifier, e.g. CC-BY-4.0 (blank: the project's)."),
    )


class CompareForm(forms.Form):
    a = forms.CharField(max_length=40)
    b = forms.CharField(max_length=40)


class RecallDrawForm(forms.Form):
    """A draw of recall probes: a sample size or a target margin of error, and a seed."""

    sample_size = forms.IntegerField(
        label=_("Sample size"),
        required=False,
        min_value=1,
        max_value=MAX_SAMPLE,
        help_text=_("How many dropped issues to draw."),
    )
    margin = forms.FloatField(
        label=_("Margin"),
        required=False,
        min_value=0.005,
        max_value=0.5,
        help_text=_("Or: the margin of error wanted on the share (0.05 = ±5 points at 95 %)."),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The seed is stored with each probe: it must fit the column.
        high = integer_range(RecallProbe, "seed")[1]
        self.fields["seed"] = forms.IntegerField(
            label=_("Seed"),
            required=False,
            min_value=0,
            max_value=high,
            help_text=_("Empty: a random seed, recorded with the draw."),
        )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if not self.errors and (data.get("sample_size") is None) == (data.get("margin") is None):
            self.add_error("sample_size", _("give either a sample size or a margin of error"))
        return data


class UploadIssuesForm(forms.Form):
    """An uploaded file of issues and what to do with it (`dataset.uploads`)."""

    ACTIONS = {"preview": _("Preview"), "dry_run": _("Dry run"), "import": _("Import")}

    file = forms.FileField(
        label=_("File"),
        help_text=_(
            "CSV or JSON Lines of issues (url, title; body, author, state, labels, "
            "created_at, updated_at, closed_at, comments optional), or one issue URL per line."
        ),
    )
    kind = forms.ChoiceField(
        label=_("Kind"),
        required=False,
        choices=[("", _("from the file's name or first line")), *UploadJob.Kind.choices],
        help_text=_("What the file is."),
    )
    source = forms.CharField(
        label=_("Source"),
        max_length=column_limit(Repository, "name"),
        initial=DEFAULT_SOURCE,
        help_text=_(
            "This project's repository (uploaded-p<project id>/<name>) of issues whose URLs "
            "are not of a forge; a forge's issue URL goes to that forge's repository."
        ),
    )
    add_to_queue = forms.BooleanField(
        label=_("Add to queue"),
        required=False,
        initial=True,
        help_text=_("Add the issues to the end of this project's queue."),
    )
    fetch = forms.BooleanField(
        label=_("Fetch"),
        required=False,
        help_text=_("For a URL list: fetch the issues from their forge after the import."),
    )
    action = forms.ChoiceField(choices=list(ACTIONS.items()))

    def clean_file(self) -> UploadedFile:
        upload = self.cleaned_data["file"]
        too_large = upload_too_large(upload.size or 0)
        if too_large:
            raise forms.ValidationError(
                _("The file is too large: %(reason)s."), params={"reason": too_large}
            )
        return upload

    def clean_source(self) -> str:
        source = self.cleaned_data["source"].strip()
        problem = source_problem(source)
        if problem:
            raise forms.ValidationError(
                _("Not a repository name: %(reason)s."), params={"reason": problem}
            )
        return source


class AddDroppedIssueForm(forms.Form):
    """A dropped issue a lead adds to the queue from the classifier's ranking."""

    issue = forms.IntegerField(min_value=1, max_value=2**63 - 1)


class TableOneEstimateForm(TableOneForm):
    """Table I's query with the machine rater whose estimates stand beside the counts (#29):
    for the roles that may read machine labels only (`with_rater`); blank, the enlisted rater
    with the best alternative annotator test (`raters.reporting.table_one_rater`)."""

    rater = forms.ModelChoiceField(
        label=_("Estimates with the machine rater"),
        queryset=MachineRater.objects.none(),
        required=False,
        empty_label=_("the enlisted rater with the best alternative annotator test"),
    )

    def __init__(
        self, *args: Any, project: Project | None = None, with_rater: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["rater"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = MachineRater.objects.filter(project=project).order_by("name")
        if not with_rater or not field.queryset.exists():
            del self.fields["rater"]

    def requested_rater(self) -> MachineRater | None:
        return self.cleaned_data.get("rater") if "rater" in self.fields else None
