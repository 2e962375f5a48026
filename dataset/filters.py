"""The API's query filters, and what the browsable API's filter form may show.

DRF's browsable API renders each list endpoint's filter set as a form. A filter on a foreign
key that django-filter generates by itself (`filterset_fields = ["issue"]`) is a `<select>` of
every row of the related table, each option printed by its `__str__`: every issue in the
database, of every project, with a query per option (issue #20, F1: 40,157 options, 30-48 s, a
private repository's issues on the page). So:

* A related object is filtered by its id, typed in (`IdFilter`): the filter narrows the
  endpoint's queryset, which is already scoped to what the caller may see, and lists nothing.
* `ScopedFilterSet`, the base of every filter set of the API (`ScopedFilterBackend`, the
  default backend in settings, uses it for `filterset_fields` too), refuses a model choice
  filter whose queryset is not a callable of the request (ImproperlyConfigured naming it): a
  fixed queryset cannot know what the caller may see. One that is a callable is shown as a
  `<select>` only up to `MAX_SELECT_CHOICES` choices, and as a text input (an id) above.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ImproperlyConfigured
from django_filters.rest_framework import DjangoFilterBackend

from labeling.models import Annotation, Resolution

# Above this many choices a filter is a text input: a select of thousands of rows is a page of
# megabytes that nobody scrolls.
MAX_SELECT_CHOICES = 200
MAX_ID = 2**63 - 1  # bigint


class IdFilter(django_filters.NumberFilter):
    """A row id typed in: whole, positive, within bigint (anything else is a 400 naming the
    field, never a query)."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


class ScopedFilterSet(django_filters.FilterSet):
    """A filter set whose form lists only what the request may see, and never too much."""

    @property
    def form(self) -> forms.Form:
        if not hasattr(self, "_form"):
            form = super().form
            for name, declared in self.filters.items():
                if isinstance(
                    declared,
                    django_filters.ModelChoiceFilter | django_filters.ModelMultipleChoiceFilter,
                ):
                    _bound(form.fields[name], declared, f"{type(self).__name__}.{name}")
        return self._form


def _bound(field: forms.Field, declared: Any, where: str) -> None:
    if not callable(declared.queryset):
        raise ImproperlyConfigured(
            f"{where}: a model choice filter needs a queryset that is a callable of the request "
            "(what this caller may see), or use IdFilter"
        )
    assert isinstance(field, forms.ModelChoiceField) and field.queryset is not None
    if len(field.queryset[: MAX_SELECT_CHOICES + 1]) > MAX_SELECT_CHOICES:
        # Still validated against the scoped queryset; only the list of options goes.
        field.widget = forms.TextInput()


class ScopedFilterBackend(DjangoFilterBackend):
    """DRF's django-filter backend, with `ScopedFilterSet` for filter sets it generates."""

    filterset_base = ScopedFilterSet


class AnnotationFilter(ScopedFilterSet):
    issue = IdFilter(field_name="issue_id", help_text="issue id")
    is_current = django_filters.BooleanFilter()

    class Meta:
        model = Annotation
        fields = ["issue", "is_current"]


class ResolutionFilter(ScopedFilterSet):
    method = django_filters.ChoiceFilter(choices=Resolution.Method.choices)

    class Meta:
        model = Resolution
        fields = ["method"]
