"""The one refusal of input that names its field (`Refusal`), and the glue that turns it into
what each caller answers: the field's error on a form (`add_to_form`, `call_with_form`; the
page answers 400), a DRF 400 `{field: [message]}` (`call_with_serializer`), or a management
command's `CommandError` "option: message" (`command_error`).

A function that takes input (a release, a recall draw, a label, a rater, an estimate, a policy
simulation) raises `Refusal(field, message)`: `field` is the form field, option or key at fault
(a name, never translated), `message` what is wrong in the reader's language (gettext when
raised). Its text is "field: message", which a command or a one-line flash message shows as is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django import forms
from django.core.management.base import CommandError
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

T = TypeVar("T")

_SAME: Mapping[str, str] = {}


class Refusal(ValueError):
    """Input a function cannot use; `field` names the form field, option or key at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
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
        raise ValidationError({refusal.field: [refusal.message]}) from refusal


def command_error(
    refusal: Refusal, renamed: Mapping[str, str] = _SAME, *, dashes: bool = False
) -> CommandError:
    """The refusal as a command's error, "option: message": `renamed` maps the function's name
    of a field to the command's option, and `dashes` writes its underscores as dashes."""
    name = renamed.get(refusal.field, refusal.field)
    if dashes:
        name = name.replace("_", "-")
    return CommandError(f"{name}: {refusal.message}")
