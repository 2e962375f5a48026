"""One permission-scoped lookup per object kind: outsiders get 404, never a hint."""

from __future__ import annotations

from collections.abc import Iterable

from django.http import Http404

from annotator.models import LEAD_ROLES, Membership, Project


def membership_or_404(user, project_id: int, roles: Iterable[str] | None = None) -> Membership:
    """The user's membership of the project, or 404 if absent or of another role.

    Superusers act as project admins everywhere.
    """
    if not user.is_authenticated:
        raise Http404
    membership = (
        Membership.objects.select_related("project", "project__taxonomy_version")
        .filter(project_id=project_id, user=user)
        # No ordering: Membership's default order joins auth_user, on every request.
        .order_by()
        .first()
    )
    if membership is None and user.is_superuser:
        project = Project.objects.filter(pk=project_id).first()
        if project is None:
            raise Http404
        membership = Membership(project=project, user=user, role="admin")
    if membership is None or (roles is not None and membership.role not in set(roles)):
        raise Http404
    return membership


def project_for_lead_or_404(user, project_id: int) -> Project:
    return membership_or_404(user, project_id, roles=LEAD_ROLES).project
