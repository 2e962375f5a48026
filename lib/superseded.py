"""Failed runs that a later run has made stale.

A list of runs (a rater's runs, exports, releases, uploads), newest first, keeps a failed run
and its error after a later run of the same kind succeeded; shown as they are, that error
reads as the current state. `mark` tells each such failure which later success it is older
than, so that a page says so and folds the old error away instead of showing it as news.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

ATTRIBUTE = "superseded_by"


def created(item: Any) -> tuple[Any, int]:
    """Later = made later (`created_at`, then the row id)."""
    return (item.created_at, item.pk)


def mark(
    items: Iterable[T],
    key: Callable[[T], Hashable],
    failed: str,
    done: str,
    newer: Callable[[T], Any] = created,
) -> list[T]:
    """The items (in their order; each has a `status`), each one whose status is `failed` and
    that has a later item of the same `key` whose status is `done` (later by `newer`) given
    `superseded_by` = that success (the earliest after it); every other item None."""
    listed = list(items)
    successes: dict[Hashable, list[T]] = {}
    for item in listed:
        if getattr(item, "status", None) == done:
            successes.setdefault(key(item), []).append(item)
    for item in listed:
        later = None
        if getattr(item, "status", None) == failed:
            after = [s for s in successes.get(key(item), ()) if newer(s) > newer(item)]
            later = min(after, key=newer) if after else None
        setattr(item, ATTRIBUTE, later)
    return listed
