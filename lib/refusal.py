"""The one refusal of input that names its field (`Refusal`), and the glue that turns it into
what each caller answers: the field's error on a form (`add_to_form`, `call_with_form`; the
page answers 400), a DRF 400 `{field: [message]}` (`call_with_serializer`), or a management
command's `CommandError` "option: message" (`command_error`).

A function that takes input (a release, a recall draw, a label, a rater, an estimate, a policy
simulation, a project's setup, a lead's action on a disputed issue) raises
`Refusal(field, message)`: `field` is the form field, option or key at fault (a name, never
translated), `message` what is wrong in the reader's language (gettext when raised). Its text
is "field: message", which a command or a one-line flash message shows as is. A refusal of the
request as a whole (the state of what it acts on, not a value: an issue already final, a label
locked) names `WHOLE`, Django's key for a form's own errors; its text is the message alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.core.management.base import CommandError
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings

T = TypeVar("T")

_SAME: Mapping[str, str] = {}

# The field of a refusal of the request as a whole: a form's error on top, DRF's
# non_field_errors, a command's message alone.
WHOLE = NON_FIELD_ERRORS


class Refusal(ValueError):
    """Input a function cannot use; `field` names the form field, option or key at fault
    (`WHOLE`: none, the request as a whole)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message if field == WHOLE else f"{field}: {message}")
        self.field = field
        self.message = message


def add_to_form(form: forms.BaseForm, refusal: Refusal, renamed: Mapping[str, str] = _SAME) -> None:
    """The refusal as the form's error: beside the field it names (`renamed` maps the
    function's name of a field to the form's), else on top of the form."""
    field = renamed.get(refusal.field, refusal.field)
    form.add_error(field if field in form.fields else None, refusal.message)


def call_with_form(form: forms.Form, call: Callable[[Mapping[str, Any]], T]) -> T | None:
    """`call(form.cleaned_data)` if the form is valid; None when the form or the function
    refused, the reason then being on the form (beside the field it names, else on top)."""
    if not form.is_valid():
        return None
    try:
        return call(form.cleaned_data)
    except Refusal as refusal:
        add_to_form(form, refusal)
        return None


def call_with_serializer(
    serializer: serializers.Serializer, call: Callable[[Mapping[str, Any]], T]
) -> T:
    """`call(validated_data)`; a refused input raises ValidationError naming the field (DRF
    answers 400 `{field: [message]}`)."""
    serializer.is_valid(raise_exception=True)
    try:
        return call(serializer.validated_data)
    except Refusal as refusal:
        key = api_settings.NON_FIELD_ERRORS_KEY if refusal.field == WHOLE else refusal.field
        raise ValidationError({key: [refusal.message]}) from refusal


def command_error(
    refusal: Refusal, renamed: Mapping[str, str] = _SAME, *, dashes: bool = False
) -> CommandError:
    """The refusal as a command's error, "option: message": `renamed` maps the function's name
    of a field to the command's option, and `dashes` writes its underscores as dashes; a
    refusal of the request as a whole is its message alone."""
    if refusal.field == WHOLE:
        return CommandError(refusal.message)
    name = renamed.get(refusal.field, refusal.field)
    if dashes:
        name = name.replace("_", "-")
    return CommandError(f"{name}: {refusal.message}")
