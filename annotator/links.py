"""The links on a project's page, and who sees each one.

Every app that has a project page registers its links here (from its `AppConfig.ready`) with the
roles its view admits, so the page shows a member exactly the pages they can open: the same role
tuples the views pass to `membership_or_404`. `tests/annotator/test_project_links.py` opens
every link as every role and checks that the visible ones answer and the hidden ones are 404.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.urls import reverse

from annotator.models import Membership, Role

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

ALL_ROLES: tuple[str, ...] = tuple(Role.values)


@dataclass(frozen=True)
class ProjectLink:
    """A page of a project: its label, URL name (taking `project_id`) and the roles it admits."""

    label: StrOrPromise  # a lazy translation: shown in each request's language
    url_name: str
    roles: tuple[str, ...]
    order: int
    primary: bool = False
    element_id: str = ""


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
        }
        for link in links_for(membership.role)
    ]


def roles(*names: Iterable[str] | str) -> tuple[str, ...]:
    """A flat tuple of role names from role tuples and names (for declaring a link's roles)."""
    out: list[str] = []
    for name in names:
        out.extend([name] if isinstance(name, str) else name)
    return tuple(dict.fromkeys(str(n) for n in out))
