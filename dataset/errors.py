"""The one error shape of the dataset functions that take input (`FieldError`), which
`dataset.formviews` turns into a form error or a 400 naming the field."""

from __future__ import annotations


class FieldError(Exception):
    """Input a function cannot use; `field` names the form field, option or key at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
