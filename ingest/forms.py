"""Forms of the ingest pages."""

from __future__ import annotations

from django import forms

from ingest.models import Repository


class RepositoryForm(forms.ModelForm):
    api_url = forms.URLField(
        required=False,
        max_length=300,
        assume_scheme="https",
        help_text="Empty: the forge's public API.",
    )

    class Meta:
        model = Repository
        fields = [
            "forge", "owner", "name", "api_url", "group", "is_framework", "keyword_set",
            "include_pull_requests", "sync_interval_hours",
        ]  # fmt: skip

    def clean_api_url(self) -> str:
        url = self.cleaned_data.get("api_url") or ""
        forge = self.cleaned_data.get("forge")
        return url.rstrip("/") or (Repository.DEFAULT_API_URLS.get(forge, "") if forge else "")
