"""The lead's forms: add a rater, run one."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from annotator.models import Project
from labeling.models import MachineRater
from raters.models import RaterRun
from raters.runs import RaterSettings, key_variable_refused


class AddRaterForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100)
    kind = forms.ChoiceField(label=_("Kind"), choices=MachineRater.Kind.choices)
    model = forms.CharField(label=_("Model"), max_length=200, required=False)
    api_url = forms.URLField(
        label=_("API URL"), max_length=500, required=False, assume_scheme="https"
    )
    api_key_env = forms.RegexField(
        label=_("Api key env"),
        regex=r"^[A-Za-z_][A-Za-z0-9_]*$",
        max_length=100,
        required=False,
        error_messages={"invalid": _("the name of an environment variable (letters, digits, _)")},
    )
    temperature = forms.FloatField(
        label=_("Temperature"), min_value=0, max_value=2, initial=0, required=False
    )
    samples = forms.IntegerField(
        label=_("Samples"), min_value=1, max_value=20, initial=1, required=False
    )
    prompt_details = forms.BooleanField(
        required=False,
        label=_("Show the taxonomy's example details in the prompt"),
        help_text=_(
            "Off keeps validation out of sample: details are annotators' words about "
            "study issues, perhaps the one labeled."
        ),
    )

    def clean_api_key_env(self) -> str:
        name: str = self.cleaned_data["api_key_env"]
        why = key_variable_refused(name)
        if why:
            raise forms.ValidationError(why)
        return name

    def settings(self) -> RaterSettings:
        data = self.cleaned_data
        return RaterSettings(
            name=data["name"],
            kind=data["kind"],
            model=data["model"],
            api_url=data["api_url"],
            api_key_env=data["api_key_env"],
            temperature=data["temperature"] if data["temperature"] is not None else 0.0,
            samples=data["samples"] or 1,
            prompt_details=data["prompt_details"],
        )


class RunForm(forms.Form):
    only = forms.ChoiceField(choices=RaterRun.Scope.choices, initial=RaterRun.Scope.ALL)


class EnlistForm(forms.Form):
    """Enlist a rater in the adaptive stopping rule, from a confidence threshold on."""

    enlisted = forms.BooleanField(required=False)
    confidence_threshold = forms.FloatField(min_value=0.0, max_value=1.0, required=False)


class EstimateForm(forms.Form):
    """The estimates page's and API's query: which rater, level, grouping, sample and plan."""

    rater = forms.ModelChoiceField(label=_("Machine rater"), queryset=MachineRater.objects.none())
    level = forms.ChoiceField(
        label=_("Level"),
        choices=[("type", _("type")), ("theme", _("theme"))],
        initial="type",
        required=False,
    )
    by = forms.ChoiceField(
        label=_("Grouped by"),
        choices=[("", _("the whole scope")), ("repository", _("repository")), ("year", _("year"))],
        required=False,
    )
    replay_sample = forms.IntegerField(
        label=_("Replay a random sample of"),
        min_value=2,
        max_value=10_000_000,
        required=False,
        help_text=_("final issues, as if only they were labeled (to plan or to check)"),
    )
    seed = forms.IntegerField(label=_("Seed"), min_value=0, max_value=2**31 - 1, required=False)
    plan = forms.FloatField(
        label=_("Plan for a half-width of"),
        min_value=0.001,
        max_value=0.49,
        required=False,
        help_text=_("e.g. 0.02 for ±2 percentage points"),
    )

    def __init__(self, *args: Any, project: Project | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["rater"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = MachineRater.objects.filter(project=project)


class ImportLabelsForm(forms.Form):
    """A lead's upload of machine labels made elsewhere (`raters.imports`)."""

    rater = forms.CharField(
        label=_("External rater"),
        max_length=100,
        help_text=_("a new name makes a new external rater; an existing one gets a new version"),
    )
    model = forms.CharField(label=_("Model"), max_length=200, required=False)
    file = forms.FileField(
        label=_("CSV file"),
        help_text=_("the columns Issue_URL,label,confidence; label a taxonomy code or FP"),
    )
