"""Reading Prometheus's text format in the tests, with prometheus_client's own parser (not the
code that writes it)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of an exposition: (sample name, its labels) -> value."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float:
    """One sample's value, 0 when it is not there (a counter not counted yet)."""
    return samples(text).get((name, frozenset(labels.items())), 0.0)
