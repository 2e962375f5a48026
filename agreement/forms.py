"""Forms of the agreement pages."""

from __future__ import annotations

from django import forms

# The audit page lists at most this many rows (the command lists any number).
MAX_AUDIT_ROWS = 1000
DEFAULT_AUDIT_ROWS = 50


class AuditForm(forms.Form):
    """The label audit page's query string: how many of the least likely finals to list."""

    top = forms.IntegerField(required=False, min_value=1, max_value=MAX_AUDIT_ROWS)

    def rows(self) -> int:
        return self.cleaned_data.get("top") or DEFAULT_AUDIT_ROWS
