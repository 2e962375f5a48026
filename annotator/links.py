"""The links on a project's page, and who sees each one.

Every app that has a project page registers its links here (from its `AppConfig.ready`) with the
roles its view admits, so the page shows a member exactly the pages they can open: the same role
tuples the views pass to `membership_or_404`. `tests/annotator/test_project_links.py` opens
every link as every role and checks that the visible ones answer and the hidden ones are 404.

Each link belongs to a group named for what a member does there (`GROUPS`: label, resolve and
review, analyse, publish, set up); the project page shows the groups in that order, each under
its heading, so a lead's many pages read as a few tasks rather than a row of equal buttons.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from annotator.models import Membership, Role

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

ALL_ROLES: tuple[str, ...] = tuple(Role.values)

# The groups of the project page, in page order: (key, heading). A heading names what a member
# does with the pages under it, in the study's words.
LABEL, RESOLVE, ANALYSE, PUBLISH, SET_UP = "label", "resolve", "analyse", "publish", "set-up"
GROUPS: tuple[tuple[str, StrOrPromise], ...] = (
    (LABEL, _("Label")),
    (RESOLVE, _("Resolve and review")),
    (ANALYSE, _("Analyse")),
    (PUBLISH, _("Publish")),
    (SET_UP, _("Set up")),
)
_GROUP_ORDER = {key: n for n, (key, _heading) in enumerate(GROUPS)}


@dataclass(frozen=True)
class ProjectLink:
    """A page of a project: its label, URL name (taking `project_id`), the roles it admits, its
    place in the flat order and its group on the page (one of `GROUPS`' keys)."""

    label: StrOrPromise  # a lazy translation: shown in each request's language
    url_name: str
    roles: tuple[str, ...]
    order: int
    primary: bool = False
    element_id: str = ""
    group: str = field(kw_only=True)  # required: every page is placed deliberately

    def __post_init__(self) -> None:
        if self.group not in _GROUP_ORDER:
            raise ValueError(
                f"{self.url_name}: group {self.group!r} is not one of {[*_GROUP_ORDER]}"
            )


_REGISTRY: dict[str, ProjectLink] = {}


def register(*links: ProjectLink) -> None:
    """Add links to the project page (called once per app; a URL name registers once)."""
    for link in links:
        _REGISTRY[link.url_name] = link


def registered() -> list[ProjectLink]:
    return sorted(_REGISTRY.values(), key=lambda link: link.order)


def links_for(role: str) -> list[ProjectLink]:
    """The registered links a member of `role` can open, in page order."""
    return [link for link in registered() if role in link.roles]


def visible_links(membership: Membership) -> list[dict[str, object]]:
    """What the project page renders for this member: label, URL, primary flag and element id."""
    project_id = membership.project_id
    return [
        {
            "label": link.label,
            "url": reverse(link.url_name, kwargs={"project_id": project_id}),
            "primary": link.primary,
            "id": link.element_id,
            "url_name": link.url_name,
        }
        for link in links_for(membership.role)
    ]


def grouped_links(membership: Membership) -> list[dict[str, object]]:
    """The member's links by group, in page order: each group's key, heading and links (as
    `visible_links` gives them); a group with none of the member's pages is left out."""
    by_group: dict[str, list[dict[str, object]]] = {}
    groups = {link.url_name: link.group for link in registered()}
    for shown in visible_links(membership):
        by_group.setdefault(groups[str(shown["url_name"])], []).append(shown)
    return [
        {"key": key, "heading": heading, "links": by_group[key]}
        for key, heading in GROUPS
        if key in by_group
    ]


def roles(*names: Iterable[str] | str) -> tuple[str, ...]:
    """A flat tuple of role names from role tuples and names (for declaring a link's roles)."""
    out: list[str] = []
    for name in names:
        out.extend([name] if isinstance(name, str) else name)
    return tuple(dict.fromkeys(str(n) for n in out))
