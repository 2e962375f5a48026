from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from knox.models import AuthToken

from annotator.forms import AdminAddUserForm, AdminChangeUserForm
from annotator.models import Invite, Membership, Project


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "taxonomy_version", "annotations_per_issue", "created_at"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role", "pseudonym"]
    list_filter = ["project", "role"]


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    list_display = ["project", "role", "email", "created_at", "expires_at", "used_at"]
    readonly_fields = ["token_hash", "used_at", "used_by"]


# API tokens have no page in the admin: it has no key to show (only digests are stored), and
# each user makes and revokes their own on their account page (docs/SECURITY.md, #28 L1).
# knox's admin module registers one; it is loaded first (knox comes first in INSTALLED_APPS).
if admin.site.is_registered(AuthToken):
    admin.site.unregister(AuthToken)

admin.site.unregister(User)


@admin.register(User)
class AccountAdmin(UserAdmin):
    """Django's user admin under the username rule of every other account (annotator.accounts)."""

    add_form = AdminAddUserForm
    form = AdminChangeUserForm
