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


class AcceptInviteForm(_NewAccountForm):
    pass


class VolunteerForm(_NewAccountForm):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    email = forms.EmailField(required=False)


class InviteForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    email = forms.EmailField(required=False)
    days = forms.IntegerField(min_value=1, max_value=60, initial=7, label="Valid for (days)")
