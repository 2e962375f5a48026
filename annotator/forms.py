from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from annotator.accounts import USERNAME_MAX_LENGTH, check_new_username, check_pseudonym
from annotator.models import Membership, Role

USERNAME_HELP = _("Letters a-z and A-Z, digits and @ . + - _ only.")


class _NewAccountForm(forms.Form):
    username = forms.CharField(
        label=_("Username"), max_length=USERNAME_MAX_LENGTH, help_text=USERNAME_HELP
    )
    password = forms.CharField(label=_("Password"), widget=forms.PasswordInput, strip=False)

    def clean_username(self) -> str:
        return check_new_username(self.cleaned_data["username"])

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        password = cleaned.get("password")
        if password:
            # The validators' messages belong beside the password, not above the form.
            try:
                validate_password(password, User(username=cleaned.get("username", "")))
            except ValidationError as exc:
                self.add_error("password", exc)
        return cleaned


def grantable_roles(granter_role: str, is_superuser: bool = False) -> list[tuple[str, str]]:
    """Roles a member may give others: never more than their own (only admins make admins)."""
    # The labels in the language of the request (Role's are lazy).
    if is_superuser or granter_role == Role.ADMIN:
        return [(value, str(label)) for value, label in Role.choices]
    return [(value, str(label)) for value, label in Role.choices if value != Role.ADMIN]


class _RoleMixin(forms.BaseForm):
    def __init__(
        self, *args: Any, roles: list[tuple[str, str]] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        role = self.fields["role"]
        if roles is not None and isinstance(role, forms.ChoiceField):
            role.choices = roles


class AcceptInviteForm(_NewAccountForm):
    pass


class VolunteerForm(_RoleMixin, _NewAccountForm):
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices, initial=Role.ANNOTATOR)
    email = forms.EmailField(label=_("Email"), required=False)


class InviteForm(_RoleMixin, forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices, initial=Role.ANNOTATOR)
    email = forms.EmailField(label=_("Email"), required=False)
    days = forms.IntegerField(min_value=1, max_value=60, initial=7, label=_("Valid for (days)"))


class AdminAddUserForm(AdminUserCreationForm):
    """The admin's "add user" form, under the same username rule as every other account."""

    def clean_username(self) -> str:
        username = super().clean_username()  # None: Django's own case check added an error
        return username if username is None else check_new_username(username)


class AdminChangeUserForm(UserChangeForm):
    """The admin's user form: a renamed account follows the rule, an unchanged name is kept."""

    def clean_username(self) -> str:
        username = self.cleaned_data["username"]
        if self.instance.pk and username == self.instance.username:
            return username
        return check_new_username(username, exclude_pk=self.instance.pk)


# More lines than any study has members is a paste gone wrong, not a team.
MAX_MEMBER_LINES = 500


class MembersField(forms.CharField):
    """Members of a new project, one "username role" a line ("username" alone: annotator).

    Cleans to a list of (user, role). Every refused line is named with its number: an unknown
    username, a role that is unknown or not the granter's to give, a user listed twice, the
    creator (who joins as lead anyway).
    """

    widget = forms.Textarea

    def __init__(
        self, *, roles: list[tuple[str, str]], creator: User | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", 50_000)
        super().__init__(**kwargs)
        self.roles = [value for value, _ in roles]
        self.creator = creator

    def clean(self, value: str | None) -> list[tuple[User, str]]:
        text = super().clean(value)
        lines = [
            (number, line.replace(",", " ").split())
            for number, line in enumerate(text.splitlines(), start=1)
            if line.strip()
        ]
        if len(lines) > MAX_MEMBER_LINES:
            raise ValidationError(
                ngettext(
                    "at most %(count)d member at once",
                    "at most %(count)d members at once",
                    MAX_MEMBER_LINES,
                )
                % {"count": MAX_MEMBER_LINES}
            )
        wanted = {parts[0] for _, parts in lines}
        users = {u.username: u for u in User.objects.filter(username__in=wanted, is_active=True)}
        errors: list[str] = []
        members: list[tuple[User, str]] = []
        first_line: dict[int, int] = {}
        for number, parts in lines:
            username, role = parts[0], (parts[1] if len(parts) > 1 else Role.ANNOTATOR)
            user = users.get(username)
            names = {"line": number, "username": username, "role": role}
            if len(parts) > 2:
                errors.append(
                    gettext('line %(line)d: write "username role", found %(count)d words')
                    % {"line": number, "count": len(parts)}
                )
            elif user is None:
                errors.append(gettext('line %(line)d: no user named "%(username)s"') % names)
            elif role in Role.values and role not in self.roles:
                errors.append(
                    gettext('line %(line)d: the role "%(role)s" is not yours to give') % names
                )
            elif role not in self.roles:
                errors.append(
                    gettext('line %(line)d: unknown role "%(role)s" (one of %(roles)s)')
                    % {**names, "roles": ", ".join(self.roles)}
                )
            elif self.creator is not None and user.pk == self.creator.pk:
                errors.append(
                    gettext("line %(line)d: %(username)s is you; you join as lead") % names
                )
            elif user.pk in first_line:
                errors.append(
                    gettext("line %(line)d: %(username)s is already on line %(first)d")
                    % {**names, "first": first_line[user.pk]}
                )
            else:
                first_line[user.pk] = number
                members.append((user, role))
        if errors:
            raise ValidationError(errors)
        return members


class PseudonymForm(forms.Form):
    """A lead renames a member's pseudonym (`annotator.accounts.check_pseudonym`)."""

    pseudonym = forms.CharField(label=_("Pseudonym"), max_length=50, strip=True)

    def __init__(self, *args: Any, membership: Membership, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.membership = membership

    def clean_pseudonym(self) -> str:
        return check_pseudonym(self.membership, self.cleaned_data["pseudonym"])


class ApiTokenForm(forms.Form):
    """The API token page's two buttons."""

    action = forms.ChoiceField(
        choices=[("create", "create"), ("revoke", "revoke")],
        error_messages={
            "invalid_choice": _("must be create or revoke"),
            "required": _("missing"),
        },
    )


class ProviderForm(forms.Form):
    """Which identity provider an invite's "Join with …" button names."""

    provider = forms.ChoiceField(
        error_messages={"invalid_choice": _("not a configured identity provider")}
    )

    def __init__(self, *args: Any, providers: Sequence[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["provider"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(p.sub_id, p.name) for p in providers]
