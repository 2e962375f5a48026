"""lib.refusal: a function's refusal naming a field, answered as a form's field error, a DRF
400 naming the field, or a command's error naming the option."""

from __future__ import annotations

import pytest
from django import forms
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from lib.refusal import (
    WHOLE,
    Refusal,
    add_to_form,
    call_with_form,
    call_with_serializer,
    command_error,
)


class DrawForm(forms.Form):
    sample_size = forms.IntegerField(min_value=1)


class DrawSerializer(serializers.Serializer):
    sample_size = serializers.IntegerField(min_value=1)


def refuse(field: str):
    def call(data):
        raise Refusal(field, "too few issues")

    return call


def test_a_refusal_reads_as_its_field_and_message():
    refusal = Refusal("sample_size", "too few issues")
    assert (refusal.field, refusal.message) == ("sample_size", "too few issues")
    assert str(refusal) == "sample_size: too few issues"
    assert isinstance(refusal, ValueError)


def test_the_form_gets_the_error_beside_the_field_it_names():
    form = DrawForm({"sample_size": "5"})
    assert call_with_form(form, refuse("sample_size")) is None
    assert form.errors == {"sample_size": ["too few issues"]}


def test_a_field_the_form_lacks_goes_on_top_of_the_form():
    form = DrawForm({"sample_size": "5"})
    assert call_with_form(form, refuse("project")) is None
    assert form.errors == {"__all__": ["too few issues"]}


def test_a_renamed_field_goes_beside_the_forms_name_for_it():
    form = DrawForm({"sample_size": "5"})
    assert form.is_valid()
    add_to_form(form, Refusal("sample", "too few issues"), {"sample": "sample_size"})
    assert form.errors == {"sample_size": ["too few issues"]}


def test_the_form_is_not_called_when_invalid_and_a_valid_one_returns_the_result():
    called = []
    form = DrawForm({"sample_size": "0"})
    assert call_with_form(form, called.append) is None
    assert called == [] and "sample_size" in form.errors
    assert call_with_form(DrawForm({"sample_size": "5"}), lambda data: data["sample_size"]) == 5


def test_the_api_answers_400_naming_the_field():
    with pytest.raises(ValidationError) as refused:
        call_with_serializer(DrawSerializer(data={"sample_size": 5}), refuse("sample_size"))
    assert refused.value.status_code == 400
    assert refused.value.detail == {"sample_size": ["too few issues"]}
    ok = call_with_serializer(DrawSerializer(data={"sample_size": 5}), lambda d: d["sample_size"])
    assert ok == 5


def test_a_command_names_its_option():
    refusal = Refusal("confidence_threshold", "between 0 and 1")
    assert str(command_error(refusal)) == "confidence_threshold: between 0 and 1"
    assert str(command_error(refusal, dashes=True)) == "confidence-threshold: between 0 and 1"
    renamed = command_error(refusal, {"confidence_threshold": "threshold"})
    assert str(renamed) == "threshold: between 0 and 1"


def test_a_refusal_of_the_request_as_a_whole_is_its_message_alone_everywhere():
    """Not a value at fault but the state of what the request acts on (an issue already
    final): no field to name, on a form, in the API or from a command."""
    refusal = Refusal(WHOLE, "the issue is already final")
    assert str(refusal) == "the issue is already final"
    form = DrawForm({"sample_size": "5"})
    assert call_with_form(form, refuse(WHOLE)) is None
    assert form.errors == {"__all__": ["too few issues"]}
    with pytest.raises(ValidationError) as refused:
        call_with_serializer(DrawSerializer(data={"sample_size": 5}), refuse(WHOLE))
    assert refused.value.detail == {"non_field_errors": ["too few issues"]}
    assert str(command_error(refusal, dashes=True)) == "the issue is already final"
