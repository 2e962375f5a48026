"""The raters page's charts: `{{ row.reliability|reliability_diagram }}` gives the coordinates
of a rater's reliability diagram (`raters.calibration.diagram`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import template

from raters.calibration import diagram

register = template.Library()


@register.filter
def reliability_diagram(bins: Sequence[Sequence[Any]]) -> dict[str, Any]:
    return diagram(bins)
