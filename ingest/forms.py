"""Forms of the ingest pages.

A repository's API URL is where the server sends requests, with its forge tokens: it must be
a forge's public API or a host an admin listed (`ingest.hosts.check_api_url`). A lead adds a
repository for one of the projects they lead (an admin may add one for none).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.db.models.fields import BLANK_CHOICE_DASH
from django.utils.translation import gettext_lazy as _

from annotator.models import Project
from ingest.hosts import HostRefused, check_api_url
from ingest.models import Repository
from ingest.permissions import is_ingest_admin, led_projects


class RepositoryForm(forms.ModelForm):
    api_url = forms.URLField(
        required=False,
        max_length=300,
        assume_scheme="https",
        label=_("API URL"),
        help_text=_("Empty: the forge's public API. Other hosts only as an admin lists them."),
    )

    class Meta:
        model = Repository
        fields = [
            "forge", "owner", "name", "api_url", "group", "is_framework", "keyword_set",
            "include_pull_requests", "sync_interval_hours",
        ]  # fmt: skip
        labels = {
            "forge": _("Forge"),
            "owner": _("Owner"),
            "name": _("Name"),
            "group": _("Group"),
            "is_framework": _("Is framework"),
            "keyword_set": _("Keyword set"),
            "include_pull_requests": _("Include pull requests"),
            "sync_interval_hours": _("Sync interval hours"),
        }
        help_texts = {
            "owner": _("owner, or the GitLab group path"),
            "group": _(
                'The study group it belongs to, e.g. framework "PyTorch" or toolkit "vLLM".'
            ),
            "is_framework": _("Framework repositories are keyword-filtered; toolkits keep all."),
            "keyword_set": _("Empty: the default set of the repository's group, if any."),
            "sync_interval_hours": _("Periodic re-sync through celery beat; 0 = never."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        forge = self.fields["forge"]
        assert isinstance(forge, forms.ChoiceField)
        if self.instance.is_uploaded:
            return  # its own settings stay editable; its forge stays what it is
        # Uploaded issues have no forge to sync from (ingest.uploads makes their repositories).
        forge.choices = [
            *BLANK_CHOICE_DASH,
            *((value, label) for value, label in Repository.Forge.choices if value != "upload"),
        ]

    def clean_api_url(self) -> str:
        url = (self.cleaned_data.get("api_url") or "").rstrip("/")
        forge = self.cleaned_data.get("forge")
        if not forge:
            return url  # the forge's own error says what is wrong
        url = url or Repository.DEFAULT_API_URLS.get(forge, "")
        try:
            return check_api_url(forge, url)
        except HostRefused as exc:
            raise forms.ValidationError(
                _("Not an API URL the server may fetch: %(reason)s."), params={"reason": exc}
            ) from None


class NewRepositoryForm(RepositoryForm):
    """Adding a repository: for which of the user's projects (optional for an admin)."""

    project = forms.ModelChoiceField(
        queryset=Project.objects.none(),
        label=_("Project"),
        help_text=_("The repository joins this project's scope."),
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["project"]
        assert isinstance(field, forms.ModelChoiceField)
        if is_ingest_admin(user):
            field.queryset = Project.objects.all()
            field.required = False
        else:
            field.queryset = led_projects(user)


class RepositoryAdminForm(RepositoryForm):
    """The admin's form: every field, the API URL held to the same rule."""

    class Meta(RepositoryForm.Meta):
        fields = [*RepositoryForm.Meta.fields, "synced_until", "last_synced_at"]
        labels = {
            **RepositoryForm.Meta.labels,
            "synced_until": _("Synced until"),
            "last_synced_at": _("Last synced at"),
        }
