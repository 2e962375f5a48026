"""Scenario: Li Wei reads the site in Chinese; every string the code registers in Python is Chinese.

The template linter (`tests/test_i18n.py`) sees only templates, and makemessages finds only the
strings marked for translation: a link label, a model or app name, a field's help text or a
choice label written as a plain string is neither, and stayed English (issue #28 item 5). This
test walks the registries at run time, as the pages and the admin read them: the project page's
links and their group headings, every app's and model's name (singular and plural), every
field's help text, choice labels and explicitly written name, and the labels, help texts and
choices of every form of the apps. Under `translation.override("zh-hans")` each must differ from
its English, so a string not wrapped in `gettext_lazy` (or missing from the catalogue) fails,
named by where it is registered.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator

import pytest
from django import forms
from django.apps import apps
from django.db import models
from django.utils import translation

from annotator.links import GROUPS, registered

# The project's own apps (Django's and third parties' come with their own catalogues).
OURS = ("config", "taxonomy", "annotator", "ingest", "labeling", "agreement", "raters")
OURS += ("front", "dataset", "interviews")
# Their model names are also checked (the admin lists them; `config.borrowed_messages` gives
# those a third party leaves untranslated); their fields and forms are theirs.

# Names that read the same in both languages: products, formats, codes and language names.
SAME_IN_BOTH = frozenset(
    {"GitHub", "Gitee", "GitLab", "CSV", "JSON Lines", "JSON", "English", "简体中文", "URL", "ID"}
    | {"Axes"}  # django-axes, a name
    # django-rest-knox's names are derived from its class names (it marks none for translation,
    # so no catalogue can), and its admin page is unregistered: no page shows them.
    | {"Knox", "auth token", "auth tokens"}
)


def _text(value: object) -> str:
    return str(value) if value is not None else ""


def _field_strings(where: str, field: object) -> Iterator[tuple[str, object]]:
    help_text = getattr(field, "help_text", "")
    if help_text:
        yield f"{where}.help_text", help_text
    for value, label in getattr(field, "flatchoices", None) or []:
        if value not in ("", None):
            yield f"{where} choice {value!r}", label


def registered_strings() -> Iterator[tuple[str, object]]:
    """(where, value) of every user-visible string the Python registries hold."""
    for _key, heading in GROUPS:
        yield f"project link group {_key}", heading
    for link in registered():
        yield f"ProjectLink {link.url_name}", link.label
    for config in apps.get_app_configs():
        # The admin's index names every app with models, Django's and third parties' too.
        if config.label in OURS or any(config.get_models()):
            yield f"app {config.label}.verbose_name", config.verbose_name
        for model in config.get_models():
            name = f"{config.label}.{model.__name__}"
            yield f"{name}.verbose_name", model._meta.verbose_name
            yield f"{name}.verbose_name_plural", model._meta.verbose_name_plural
        if config.label not in OURS:
            continue
        for model in config.get_models():
            name = f"{config.label}.{model.__name__}"
            for field in model._meta.get_fields():
                if not isinstance(field, models.Field):
                    continue
                where = f"{name}.{field.name}"
                # A name written by hand must be translated; one Django derives from the
                # attribute's name is the admin's concern (`verbose_name` left unset).
                derived = field.name.replace("_", " ")
                written = field.verbose_name and str(field.verbose_name) != derived
                if written and not field.primary_key:
                    yield f"{where}.verbose_name", field.verbose_name
                yield from _field_strings(where, field)
        for form_class in _forms_of(config.label):
            where = f"{form_class.__module__}.{form_class.__name__}"
            for field_name, field in form_class.base_fields.items():
                if field.label:
                    yield f"{where}.{field_name}.label", field.label
                yield from _field_strings(f"{where}.{field_name}", field)


def _forms_of(label: str) -> Iterator[type[forms.BaseForm]]:
    try:
        module = importlib.import_module(f"{label}.forms")
    except ModuleNotFoundError:
        return
    for _name, value in inspect.getmembers(module, inspect.isclass):
        if (
            issubclass(value, forms.BaseForm)
            and value.__module__ == module.__name__
            and hasattr(value, "base_fields")
        ):
            yield value


def untranslated(strings: list[tuple[str, object]]) -> list[str]:
    """Where each string reads the same in Chinese as in English (not a name of both)."""
    with translation.override("en"):
        english = [(where, _text(value)) for where, value in strings]
    with translation.override("zh-hans"):
        chinese = [_text(value) for _where, value in strings]
    return [
        f"{where}: {text!r}"
        for (where, text), zh in zip(english, chinese, strict=True)
        if text and text == zh and text not in SAME_IN_BOTH
    ]


def test_every_registered_string_is_chinese_in_chinese():
    strings = list(registered_strings())
    # The walk reaches each kind of registry (a walk that found nothing would pass).
    kinds = {where.split(" ", 1)[0] for where, _v in strings}
    assert {"ProjectLink", "app", "project"} <= kinds
    assert any(where.endswith(".verbose_name_plural") for where, _v in strings)
    assert any(" choice " in where for where, _v in strings)
    assert any(where.endswith(".label") for where, _v in strings)
    found = untranslated(strings)
    assert not found, (
        "shown in English to a reader of Chinese (wrap in gettext_lazy, run bin/messages, "
        "translate):\n" + "\n".join(found)
    )


def test_a_plain_string_in_a_registry_is_caught():
    """The probe fires: a link label, a model name and a choice left as plain strings are named,
    and their lazily translated neighbours are not."""
    from django.utils.translation import gettext_lazy as _

    strings = [
        ("ProjectLink exports", "Exports"),
        ("ProjectLink agreement_report", _("Agreement")),
        ("ingest.PageETag.verbose_name_plural", "page e tags"),
        ("dataset.UploadJob.kind choice 'csv'", "CSV"),
        ("labeling.ProjectIssue.status choice 'final'", _("final")),
    ]
    assert untranslated(strings) == [
        "ProjectLink exports: 'Exports'",
        "ingest.PageETag.verbose_name_plural: 'page e tags'",
    ]


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_each_link_and_group_has_a_label_in_each_language(language):
    with translation.override(language):
        assert all(str(link.label).strip() for link in registered())
        assert all(str(heading).strip() for _key, heading in GROUPS)
