"""Keyword filtering of a framework repository's issues.

A framework repository (`Repository.is_framework`) keeps only the issues whose title, body or
labels match its keyword set (its own, or its study group's default); a toolkit keeps every
issue. `classify` runs on every stored page and every hydrated issue; `refilter_repository`
applies a changed keyword set to the stored issues again without asking the forge.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from ingest.keywords import Matcher, compile_keywords
from ingest.models import Issue, KeywordSet, Repository


def keyword_set_for(repository: Repository) -> KeywordSet | None:
    if repository.keyword_set_id:
        return repository.keyword_set
    if repository.group:
        return KeywordSet.objects.filter(default_for_group__iexact=repository.group).first()
    return None


def matcher_for(repository: Repository, keyword_set: KeywordSet | None = None) -> Matcher | None:
    """The compiled filter of a framework repository; None for a toolkit (keeps every issue)."""
    if not repository.is_framework:
        return None
    keyword_set = keyword_set or keyword_set_for(repository)
    return compile_keywords(keyword_set.keywords) if keyword_set else None


def classify(
    matcher: Matcher | None, title: str, body: str, labels: list[str]
) -> tuple[str, Sequence[str]]:
    """(filter_status, matched keywords) of one issue."""
    if matcher is None:
        return Issue.FilterStatus.NOT_FILTERED, []
    found = matcher.matches(title, body, " ".join(labels))
    return (Issue.FilterStatus.KEPT if found else Issue.FilterStatus.FILTERED_OUT), found


def refilter_repository(
    repository: Repository, keyword_set: KeywordSet | None = None, batch: int = 2000
) -> dict[str, int]:
    """Apply the (changed) keyword set to the stored issues again: no request to the forge."""
    matcher = matcher_for(repository, keyword_set)
    counts = {"kept": 0, "filtered_out": 0, "not_filtered": 0, "changed": 0}
    # Changed issues grouped by their new (status, keywords): one UPDATE per group and batch.
    changed: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    issues = Issue.objects.filter(repository=repository).values_list(
        "id", "title", "body", "labels", "filter_status", "matched_keywords"
    )
    for pk, title, body, labels, old_status, old_found in issues.iterator(chunk_size=batch):
        status, found = classify(matcher, title, body, labels or [])
        counts[status] += 1
        if status != old_status or found != old_found:
            changed.setdefault((status, tuple(found)), []).append(pk)
    with transaction.atomic():
        for (status, found), ids in changed.items():
            for i in range(0, len(ids), batch):
                Issue.objects.filter(pk__in=ids[i : i + batch]).update(
                    filter_status=status, matched_keywords=list(found)
                )
    counts["changed"] = sum(len(ids) for ids in changed.values())
    return counts
