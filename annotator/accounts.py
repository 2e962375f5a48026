"""Volunteer accounts: created by a lead, or by the volunteer through a one-time invite.

Two account rules live here, enforced wherever a ``User`` is saved (signals connected in
``AnnotatorConfig.ready``), so the lead's form, an invite, the admin, ``load_demo``,
``createsuperuser`` and the shell all follow them:

* A new username passes ``check_new_username``: ASCII letters, digits and ``@.+-_`` (Django's
  ``ASCIIUsernameValidator``), and no look-alike of an existing account: two names whose
  ``username_key`` is equal (same after NFKC, case folding and dropping invisible characters)
  could not be told apart in a member list, an export or an audit trail. ASCII rather than
  Unicode letters because NFKC does not fold cross-script homoglyphs (Cyrillic ``U+0430`` looks
  like Latin ``a``), while the forges' own logins (GitHub, GitLab, Gitee) are ASCII anyway; a
  volunteer's name in their own script belongs in the first / last name fields.
* API tokens are revoked when the password changes (any path through ``set_password``, or a
  new hash saved directly) or the account is deactivated: a token obtained with a leaked
  password must not outlive the password. A hash upgrade at login (Django re-hashing with more
  iterations) is not a change. The owner gets a new token on the account's API token page
  (``/account/api-token/``: created, shown once, revoked there) or from ``/api/token/``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.contrib.auth.validators import ASCIIUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models.signals import post_save, pre_save
from django.utils import timezone
from django.utils.translation import gettext
from knox.models import AuthToken

from annotator.models import Invite, Membership, Project
from lib.inputlimits import column_limit

USERNAME_MAX_LENGTH = column_limit(User, "username")
_ascii_username = ASCIIUsernameValidator()

# Characters that render as nothing (or as a blank) yet make two names differ. Unicode category
# Cf (format: zero-width space and joiners, bidi controls, soft hyphen, word joiner, BOM, tags)
# and C* controls are found by category; these others are default-ignorable code points of
# letter or mark categories that look just as empty.
_INVISIBLE_EXTRA = frozenset(
    "\u034f"  # combining grapheme joiner
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers
    "\u17b4\u17b5"  # Khmer inherent vowels
    "\u180b\u180c\u180d\u180f"  # Mongolian free variation selectors
    "\u2800"  # braille pattern blank
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))  # variation selectors
    + "".join(chr(c) for c in range(0xE0100, 0xE01F0))  # variation selectors supplement
)
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Cs", "Co", "Cn", "Zl", "Zp"})


class InviteUnusable(Exception):
    """The invite link was already used, has expired or does not exist."""


def is_invisible(char: str) -> bool:
    return (
        unicodedata.category(char) in _INVISIBLE_CATEGORIES
        or char in _INVISIBLE_EXTRA
        or (char.isspace() and char != " ")
    )


def username_key(username: str) -> str:
    """What a reader sees of a name: invisible characters dropped, NFKC, case folded.

    NFKC again after folding, as Unicode's NFKC_Casefold does, since folding can produce
    sequences that compose differently.
    """
    visible = "".join(c for c in unicodedata.normalize("NFKC", username) if not is_invisible(c))
    return unicodedata.normalize("NFKC", visible.casefold())


def _describe(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')}"


def _lock_username(key: str) -> None:
    """Serialise two creations of look-alike names until the transaction commits.

    The check reads every username, then the insert follows: without a lock two requests for
    "Admin" and "admin" could both pass. Only inside a transaction (the account services and the
    admin are atomic), only on PostgreSQL (SQLite writes one at a time anyway).
    """
    if connection.vendor != "postgresql" or not connection.in_atomic_block:
        return
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    lock_id = int.from_bytes(digest, "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [lock_id])


def check_new_username(username: str, *, exclude_pk: int | None = None) -> str:
    """Refuse a username no new (or renamed) account may take; return it unchanged.

    Raises ValidationError with the reason: an invisible character (named, so the person can
    find it), a look-alike of an existing account (``exclude_pk``: the account being renamed),
    a character outside ASCII letters, digits and ``@.+-_``, or a length over the field's.
    """
    if not username:
        raise ValidationError(gettext("Choose a username."), code="required")
    hidden = next((c for c in username if is_invisible(c)), None)
    if hidden is not None:
        raise ValidationError(
            gettext(
                "This username contains an invisible character (%(char)s); type it again "
                "without it."
            ),
            code="invisible_character",
            params={"char": _describe(hidden)},
        )
    if len(username) > USERNAME_MAX_LENGTH:
        raise ValidationError(
            gettext("Usernames have at most %(max)d characters."),
            code="max_length",
            params={"max": USERNAME_MAX_LENGTH},
        )
    key = username_key(username)
    _lock_username(key)
    others = User.objects.all() if exclude_pk is None else User.objects.exclude(pk=exclude_pk)
    # Every name is compared, not just a case-insensitive match in SQL: accounts made before
    # this rule may hold full-width or other non-ASCII names. Volunteers number in the
    # hundreds, and accounts are made rarely.
    for existing in others.values_list("username", flat=True).iterator():
        if username_key(existing) == key:
            raise ValidationError(
                gettext(
                    "This username is taken, or differs from an existing one only by letter "
                    "case, character width or invisible characters."
                ),
                code="look_alike",
            )
    _ascii_username(username)
    return username


PSEUDONYM_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._@+-]*")


def check_pseudonym(membership: Membership, pseudonym: str) -> str:
    """The pseudonym a lead typed for a member, stripped; ValidationError says what is wrong
    (empty, too long, other characters, or another member's in the project, in any case)."""
    name = pseudonym.strip()
    limit = column_limit(Membership, "pseudonym")
    if not name:
        raise ValidationError(gettext("give the member a pseudonym"), code="required")
    if len(name) > limit:
        raise ValidationError(
            gettext("at most %(limit)d characters") % {"limit": limit}, code="max_length"
        )
    if not PSEUDONYM_SHAPE.fullmatch(name):
        raise ValidationError(
            gettext(
                "letters a-z, digits, spaces and . _ @ + - only, starting with a letter or digit"
            ),
            code="invalid",
        )
    others = Membership.objects.filter(project_id=membership.project_id).exclude(pk=membership.pk)
    if others.filter(pseudonym__iexact=name).exists():
        raise ValidationError(_taken(name), code="taken")
    return name


def _taken(pseudonym: str) -> str:
    return gettext("%(pseudonym)s is another member's pseudonym in this project") % {
        "pseudonym": pseudonym
    }


def rename_pseudonym(membership: Membership, pseudonym: str) -> Membership:
    """Give the member a new pseudonym (checked by `check_pseudonym`); a member's pseudonym is
    how exports, releases and the agreement figures name them from now on."""
    membership.pseudonym = check_pseudonym(membership, pseudonym)
    try:
        with transaction.atomic():
            membership.save(update_fields=["pseudonym"])
    except IntegrityError:  # taken by another lead's edit since the check
        raise ValidationError(_taken(membership.pseudonym), code="taken") from None
    return membership


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
    """Raises ValidationError (on ``username``) if a look-alike was created meanwhile."""
    user = User.objects.create_user(username=username, password=password, email=email)
    return add_member(project, user, role)


def check_invite(token: str) -> Invite:
    invite = Invite.lookup(token)
    if invite is None:
        raise InviteUnusable(gettext("This invite link is not valid."))
    if invite.used_at is not None:
        raise InviteUnusable(gettext("This invite link has already been used."))
    if invite.expires_at <= timezone.now():
        raise InviteUnusable(gettext("This invite link has expired."))
    return invite


@transaction.atomic
def accept_invite(token: str, username: str, password: str) -> Membership:
    """Create the account and membership; a second use of the same link is refused."""
    invite = _lock_usable_invite(token)
    user = User.objects.create_user(username=username, password=password, email=invite.email)
    return _use_invite(invite, user)


@transaction.atomic
def join_by_invite(token: str, user: User) -> Membership:
    """Use the invite for an account that exists (one just made through an identity provider,
    `annotator.signin`): the membership, and the invite marked used by `user`."""
    return _use_invite(_lock_usable_invite(token), user)


def _lock_usable_invite(token: str) -> Invite:
    invite = check_invite(token)
    # Lock the row so two simultaneous uses cannot both pass the check above.
    invite = Invite.objects.select_for_update().get(pk=invite.pk)
    if invite.used_at is not None:
        raise InviteUnusable(gettext("This invite link has already been used."))
    return invite


def _use_invite(invite: Invite, user: User) -> Membership:
    membership = add_member(invite.project, user, invite.role)
    invite.used_at = timezone.now()
    invite.used_by = user
    invite.save(update_fields=["used_at", "used_by"])
    return membership


# --- Rules applied to every save of a User -------------------------------------------------

_WATCHED_FIELDS = frozenset({"username", "password", "is_active"})


def _check_saved_username(user: User, exclude_pk: int | None = None) -> None:
    # Outside a form nothing else says which name was refused (load_demo, createsuperuser, the
    # shell): name it, with escapes, so an invisible character shows.
    try:
        check_new_username(user.username, exclude_pk=exclude_pk)
    except ValidationError as exc:
        raise ValidationError(
            [
                gettext("Username %(username)s: %(message)s")
                % {"username": repr(user.username), "message": message}
                for message in exc.messages
            ],
            code="username",
        ) from exc


def _before_user_save(
    sender: type[User],
    instance: Any,
    raw: bool = False,
    update_fields: Iterable[str] | None = None,
    **kwargs: Any,
) -> None:
    """Check a new or changed username; note whether the save must revoke API tokens.

    (`instance` is a User; typed Any because the flag set on it and Django's private
    `_password` are not attributes the stubs know.)"""
    instance._revoke_api_tokens = False
    if raw:  # loaddata: fixtures are taken as they are
        return
    if instance._state.adding:
        _check_saved_username(instance)
        return
    fields = frozenset(update_fields) if update_fields is not None else None
    if fields is not None and not fields & _WATCHED_FIELDS:
        return  # e.g. last_login at every login: nothing to compare
    before = User.objects.filter(pk=instance.pk).values(*_WATCHED_FIELDS).first()
    if before is None:
        _check_saved_username(instance)
        return
    if before["username"] != instance.username:
        _check_saved_username(instance, exclude_pk=instance.pk)
    # set_password() leaves the raw password in _password until the save; Django's re-hash at
    # login clears it and saves only the password, which is the same password.
    hash_upgrade = instance._password is None and fields == frozenset({"password"})
    password_changed = instance._password is not None or (
        before["password"] != instance.password and not hash_upgrade
    )
    deactivated = before["is_active"] and not instance.is_active
    instance._revoke_api_tokens = password_changed or deactivated


def _after_user_save(
    sender: type[User], instance: Any, created: bool, raw: bool = False, **kwargs: Any
) -> None:
    if getattr(instance, "_revoke_api_tokens", False):
        AuthToken.objects.filter(user=instance).delete()
        instance._revoke_api_tokens = False


def connect_signals() -> None:
    """Called once from AnnotatorConfig.ready."""
    pre_save.connect(_before_user_save, sender=User, dispatch_uid="annotator.accounts.pre_save")
    post_save.connect(_after_user_save, sender=User, dispatch_uid="annotator.accounts.post_save")


# API tokens on the account page (`annotator.views.api_token`) and `/api/token/`
# (`annotator.api.ObtainToken`); `annotator.tokens.TokenAuthentication` reads them. Only a digest
# is stored (django-rest-knox): a key is returned once, when it is made, and never again. One
# token per user: a new one replaces the old.


def create_api_token(user: User) -> tuple[str, datetime]:
    """A new API token for `user`, replacing any older one: the key, returned this once for
    the caller to show (only its digest is stored), and when it was made."""
    with transaction.atomic():
        # The account's row locked: two requests at once still leave one token.
        User.objects.select_for_update().filter(pk=user.pk).first()
        AuthToken.objects.filter(user=user).delete()
        token, key = AuthToken.objects.create(user=user, expiry=None)
    return key, token.created


def revoke_api_token(user: User) -> bool:
    """Delete the user's API token; whether there was one."""
    deleted, _ = AuthToken.objects.filter(user=user).delete()
    return bool(deleted)


def api_token_created(user: User) -> datetime | None:
    """When the user's current API token was made (None without one); never the key."""
    return (
        AuthToken.objects.filter(user=user)
        .order_by("-created")
        .values_list("created", flat=True)
        .first()
    )


def welcome_message(membership: Membership) -> str:
    """The greeting after joining a project (by password or through a provider)."""
    return gettext("Welcome! You joined %(project)s as %(role)s.") % {
        "project": membership.project,
        "role": membership.get_role_display(),
    }
