"""The difference between two releases, read from their `final_labels.csv` rows: issues added
and removed, final labels changed (old → new, with the resolution of the newer release — the one
that changed it), and the taxonomy's changes (`taxonomy.diff`); written as `changes.csv`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TextIO

from lib import csvsafe
from taxonomy.diff import VersionDiff, diff_versions
from taxonomy.models import TaxonomyVersion

CHANGE_COLUMNS = [
    "change",
    "issue_url",
    "repository",
    "old_label",
    "new_label",
    "resolution_method",
    "decided_by",
    "decided_at",
    "detail",
]


@dataclass
class LabelChange:
    issue_url: str
    repository: str
    old: str
    new: str
    method: str
    decided_by: str
    decided_at: str
    # "resolution": a newer decision changed it; "taxonomy": the same decision, read under the
    # newer release's taxonomy version (a merge, a move, a split).
    cause: str = "resolution"

    @property
    def detail(self) -> str:
        if self.cause == "taxonomy":
            return "same resolution, read under the new taxonomy version"
        return ""


@dataclass
class ReleaseDiff:
    """What changed from `old_version` (None: nothing before) to `new_version`."""

    old_version: str | None
    new_version: str
    added: list[dict[str, str]] = field(default_factory=list)
    removed: list[dict[str, str]] = field(default_factory=list)
    changed: list[LabelChange] = field(default_factory=list)
    taxonomy: VersionDiff | None = None

    @property
    def is_empty(self) -> bool:
        taxonomy_changed = self.taxonomy is not None and not self.taxonomy.is_empty
        return not (self.added or self.removed or self.changed or taxonomy_changed)


def _same_resolution(a: dict[str, str], b: dict[str, str]) -> bool:
    keys = ("resolution_method", "decided_by", "decided_at")
    return all(a.get(k) == b.get(k) for k in keys) and bool(b.get("decided_at"))


def diff_labels(
    old: dict[str, dict[str, str]],
    new: dict[str, dict[str, str]],
    old_version: str | None,
    new_version: str,
    old_taxonomy: TaxonomyVersion | None = None,
    new_taxonomy: TaxonomyVersion | None = None,
) -> ReleaseDiff:
    """Issues added and removed, and final labels changed (with the resolution of the newer
    side, the one that changed it), between two releases' `final_labels.csv` rows."""
    diff = ReleaseDiff(old_version, new_version)
    retaxonomised = (
        old_taxonomy is not None and new_taxonomy is not None and old_taxonomy != new_taxonomy
    )
    for url, row in new.items():
        before = old.get(url)
        if before is None:
            diff.added.append(row)
        elif before["final_label"] != row["final_label"]:
            diff.changed.append(
                LabelChange(
                    url,
                    row["repository"],
                    before["final_label"],
                    row["final_label"],
                    row["resolution_method"],
                    row["decided_by"],
                    row["decided_at"],
                    cause="taxonomy"
                    if retaxonomised and _same_resolution(before, row)
                    else "resolution",
                )
            )
    diff.removed = [row for url, row in old.items() if url not in new]
    if old_taxonomy is not None and new_taxonomy is not None and old_taxonomy != new_taxonomy:
        diff.taxonomy = diff_versions(old_taxonomy, new_taxonomy)
    return diff


def write_changes(diff: ReleaseDiff, out: TextIO) -> int:
    """`changes.csv`: one row per added or removed issue, changed label and taxonomy change
    (only the header for a first release)."""
    writer = csvsafe.writer(out)
    writer.writerow(CHANGE_COLUMNS)
    rows = 0

    def row(*cells: str) -> None:
        nonlocal rows
        writer.writerow(cells)
        rows += 1

    for r in diff.added:
        row(
            "issue_added",
            r["issue_url"],
            r["repository"],
            "",
            r["final_label"],
            r["resolution_method"],
            r["decided_by"],
            r["decided_at"],
            "",
        )
    for r in diff.removed:
        row("issue_removed", r["issue_url"], r["repository"], r["final_label"], "", "", "", "", "")
    for c in diff.changed:
        row(
            "label_changed",
            c.issue_url,
            c.repository,
            c.old,
            c.new,
            c.method,
            c.decided_by,
            c.decided_at,
            c.detail,
        )
    if diff.taxonomy is not None:
        for change in diff.taxonomy.changes:
            row(
                f"taxonomy_{change.kind}",
                "",
                "",
                " ".join(n.code for n in change.old),
                " ".join(n.code for n in change.new),
                "",
                "",
                "",
                change.text,
            )
    return rows
