"""One outline for the pages and APIs that take input and call a function (releases, recall
draws): validate with a form or serializer, call the function with the cleaned data, and turn
the function's refusal naming a field (`dataset.errors.FieldError`) into that field's error:
a form error the page answers with 400, or a DRF `ValidationError` (400 `{field: [message]}`).

The function's own exceptions (`dataset.recall.RecallError`, `dataset.releases.ReleaseError`)
are `FieldError`s, so each view states only what it calls and what it answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django import forms
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from dataset.errors import FieldError

T = TypeVar("T")


def call_with_form(form: forms.Form, call: Callable[[Mapping[str, Any]], T]) -> T | None:
    """`call(form.cleaned_data)` if the form is valid; None when the form or the function
    refused, the reason then being on the form (beside the field it names, else on top)."""
    if not form.is_valid():
        return None
    try:
        return call(form.cleaned_data)
    except FieldError as exc:
        form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        return None


def call_with_serializer(
    serializer: serializers.Serializer, call: Callable[[Mapping[str, Any]], T]
) -> T:
    """`call(validated_data)`; a refused input raises ValidationError naming the field."""
    serializer.is_valid(raise_exception=True)
    try:
        return call(serializer.validated_data)
    except FieldError as exc:
        raise ValidationError({exc.field: [exc.message]}) from exc
