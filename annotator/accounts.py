"""Volunteer accounts: created by a lead, or by the volunteer through a one-time invite."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotator.models import Invite, Membership, Project


class InviteUnusable(Exception):
    """The invite link was already used, has expired or does not exist."""


def add_member(project: Project, user: User, role: str) -> Membership:
    membership, created = Membership.objects.get_or_create(
        project=project, user=user, defaults={"role": role}
    )
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def create_volunteer(
    project: Project, username: str, password: str, role: str, email: str = ""
) -> Membership:
    user = User.objects.create_user(username=username, password=password, email=email)
    return add_member(project, user, role)


def check_invite(token: str) -> Invite:
    invite = Invite.lookup(token)
    if invite is None:
        raise InviteUnusable("This invite link is not valid.")
    if invite.used_at is not None:
        raise InviteUnusable("This invite link has already been used.")
    if invite.expires_at <= timezone.now():
        raise InviteUnusable("This invite link has expired.")
    return invite


@transaction.atomic
def accept_invite(token: str, username: str, password: str) -> Membership:
    """Create the account and membership; a second use of the same link is refused."""
    invite = check_invite(token)
    # Lock the row so two simultaneous uses cannot both pass the check above.
    invite = Invite.objects.select_for_update().get(pk=invite.pk)
    if invite.used_at is not None:
        raise InviteUnusable("This invite link has already been used.")
    user = User.objects.create_user(username=username, password=password, email=invite.email)
    membership = add_member(invite.project, user, invite.role)
    invite.used_at = timezone.now()
    invite.used_by = user
    invite.save(update_fields=["used_at", "used_by"])
    return membership
