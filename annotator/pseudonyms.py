"""How a project names its members where their identity must not show: one map from user id to
pseudonym, the name of someone without one, and the natural order of pseudonyms.

Used by the exports and the API (`dataset`), the agreement report and the label audit
(`agreement`) and the read-only issue page (`labeling.issue_list`). Pseudonyms are stored on
the membership (`Membership.pseudonym`, given by `Membership.save`), so they are stable.
"""

from __future__ import annotations

from collections.abc import Iterable

from annotator.models import Membership, Project


def pseudonyms(project: Project | int, real_names: bool = False) -> dict[int, str]:
    """User id -> how each member appears: the stored pseudonym (`unnamed` if it is blank), or
    the username with `real_names` (an admin's export)."""
    project_id = project if isinstance(project, int) else project.pk
    out = {}
    for user_id, username, pseudonym in Membership.objects.filter(
        project_id=project_id
    ).values_list("user_id", "user__username", "pseudonym"):
        out[user_id] = username if real_names else (pseudonym or unnamed(user_id))
    return out


def unnamed(user_id: int) -> str:
    """The name of a labeler with no pseudonym in the project (no longer a member)."""
    return f"annotator-{user_id}"


def names_of(project: Project | int, user_ids: Iterable[int]) -> list[str]:
    """The pseudonyms of `user_ids`, in their order (`unnamed` for a former member)."""
    names = pseudonyms(project)
    return [names.get(u) or unnamed(u) for u in user_ids]


def natural_order(name: str) -> tuple[str, int]:
    """A sort key putting rater-2 before rater-10 (a trailing -number is compared as a number)."""
    head, _, tail = name.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (name, 0)
