"""One permission-scoped lookup per object kind: outsiders get 404, never a hint."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from django.contrib.auth.models import AnonymousUser, User
from django.http import Http404

from annotator.models import Membership, Project
from lib import sql
from taxonomy.models import TaxonomyVersion


@cache
def _membership_sql() -> str:
    # Every page of a project starts here, so it is one hand-written statement rather than an
    # ORM query (whose compilation cost more than the query; see lib.sql).
    return (
        f"SELECT {sql.columns(Membership, 'm')}, {sql.columns(Project, 'p')},"
        f" {sql.columns(TaxonomyVersion, 'v')}"
        f" FROM {Membership._meta.db_table} m"
        f" JOIN {Project._meta.db_table} p ON p.id = m.project_id"
        f" JOIN {TaxonomyVersion._meta.db_table} v ON v.id = p.taxonomy_version_id"
        " WHERE m.project_id = %(project)s AND m.user_id = %(user)s"
    )


def _membership(user: User | AnonymousUser, project_id: int) -> Membership | None:
    row = sql.first(_membership_sql(), {"project": project_id, "user": user.pk})
    if row is None:
        return None
    membership, at = sql.model_from_row(Membership, row)
    project, at = sql.model_from_row(Project, row, at)
    project.taxonomy_version, _ = sql.model_from_row(TaxonomyVersion, row, at)
    membership.project = project
    return membership


def membership_or_404(
    user: User | AnonymousUser, project_id: int, roles: Iterable[str] | None = None
) -> Membership:
    """The user's membership of the project, or 404 if absent or of another role.

    Superusers act as project admins everywhere.
    """
    if not user.is_authenticated:
        raise Http404
    try:
        project_id = int(project_id)
    except (TypeError, ValueError):
        raise Http404 from None
    if not sql.is_row_id(project_id):
        raise Http404
    membership = _membership(user, project_id)
    if membership is None and user.is_superuser:
        project = Project.objects.filter(pk=project_id).first()
        if project is None:
            raise Http404
        membership = Membership(project=project, user=user, role="admin")
    if membership is None or (roles is not None and membership.role not in set(roles)):
        raise Http404
    return membership


def may_create_project(user: User | AnonymousUser) -> bool:
    """Who may open the "New project" page: admins (staff or superusers) and users an admin
    gave the Django permission `annotator.add_project`. Everyone else gets 404 there."""
    if not (user.is_authenticated and user.is_active):
        return False
    return bool(user.is_staff or user.is_superuser or user.has_perm("annotator.add_project"))


def may_add_existing_accounts(user: User | AnonymousUser) -> bool:
    """Who may make an existing account a member without its consent (the members box of the
    "New project" page): admins (staff or superusers) only. A holder of `annotator.add_project`
    is not: the account would join, up to lead, and a lead gets the scope's repositories
    (`ingest.permissions`) without having accepted anything. Others invite (`Invite`): the
    account joins when it accepts, and nothing tells them which usernames exist."""
    return bool(user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser))
