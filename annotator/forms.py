from django import forms
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password

from annotator.models import Role


class _NewAccountForm(forms.Form):
    username = forms.CharField(max_length=150)
    password = forms.CharField(widget=forms.PasswordInput, strip=False)

    def clean_username(self):
        username = self.cleaned_data["username"]
        if User.objects.filter(username__iexact=username).exists():
            raise forms.ValidationError("That username is taken.")
        return username

    def clean(self):
        cleaned = super().clean()
        password = cleaned.get("password")
        if password:
            validate_password(password, User(username=cleaned.get("username", "")))
        return cleaned


def grantable_roles(granter_role: str, is_superuser: bool = False) -> list[tuple[str, str]]:
    """Roles a member may give others: never more than their own (only admins make admins)."""
    if is_superuser or granter_role == Role.ADMIN:
        return list(Role.choices)
    return [(value, label) for value, label in Role.choices if value != Role.ADMIN]


class _RoleMixin:
    def __init__(self, *args, roles: list[tuple[str, str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        if roles is not None:
            self.fields["role"].choices = roles


class AcceptInviteForm(_NewAccountForm):
    pass


class VolunteerForm(_RoleMixin, _NewAccountForm):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    email = forms.EmailField(required=False)


class InviteForm(_RoleMixin, forms.Form):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    email = forms.EmailField(required=False)
    days = forms.IntegerField(min_value=1, max_value=60, initial=7, label="Valid for (days)")
