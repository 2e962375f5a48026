"""The project pages: your projects with their progress, a new project, one project's overview,
and the lead's invites and accounts made from it (a refused form comes back on the page with its
errors)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_POST

from annotator.accounts import create_volunteer, rename_pseudonym
from annotator.forms import InviteForm, PseudonymForm, VolunteerForm, grantable_roles
from annotator.links import grouped_links
from annotator.models import LEAD_ROLES, Invite, Membership, Project, Role
from annotator.permissions import may_create_project, membership_or_404
from front.forms import NewProjectForm, NewProjectScopeForm
from ingest.permissions import is_ingest_admin, manageable_repositories
from labeling import setup
from labeling.models import ProjectIssue
from lib.refusal import Refusal, add_to_form
from lib.requests import AuthedRequest


def _project_counts(project_ids: list[int]) -> dict[int, Mapping[str, Any]]:
    rows = (
        ProjectIssue.objects.filter(project_id__in=project_ids)
        .values("project_id")
        .annotate(
            total=Count("id"),
            final=Count("id", filter=Q(status="final")),
            # Final or disputed: what non-leads are told instead of "final" (issue #20, F5).
            done=Count("id", filter=~Q(status="open")),
            disagreements=Count("id", filter=Q(status="disagreement")),
        )
    )
    return {row["project_id"]: row for row in rows}


@login_required
def home(request: AuthedRequest) -> HttpResponse:
    memberships = list(request.user.memberships.select_related("project"))
    if request.user.is_superuser:
        member_of = {m.project_id for m in memberships}
        memberships += [
            # Unsaved: the admin is shown every project as if a member of it.
            Membership(project=p, role=Role.ADMIN)
            for p in Project.objects.exclude(pk__in=member_of)
        ]
    counts = _project_counts([m.project_id for m in memberships])
    rows = []
    for m in memberships:
        c = counts.get(m.project_id, {"total": 0, "final": 0, "done": 0, "disagreements": 0})
        # Blindness: how many issues are disputed, or final, is for leads only; others see
        # how many have all their labels.
        is_lead = m.role in LEAD_ROLES
        shown = c["final"] if is_lead else c["done"]
        percent = round(100 * shown / c["total"]) if c["total"] else 0
        row = {"project": m.project, "role": m.role, "percent": percent, "is_lead": is_lead}
        row.update(total=c["total"], done=c["done"])
        if is_lead:  # never in a non-lead's context, not even unrendered
            row.update(final=c["final"], disagreements=c["disagreements"])
        rows.append(row)
    return render(
        request,
        "front/home.html",
        {
            "rows": rows,
            # The columns only a lead may read are left out for someone who leads nothing.
            "leads_any": any(row["is_lead"] for row in rows),
            "may_create_project": may_create_project(request.user),
        },
    )


def _creation_forms(
    request: AuthedRequest, data: QueryDict | None = None
) -> tuple[NewProjectForm, NewProjectScopeForm]:
    user = request.user
    return (
        NewProjectForm(data, user=user),
        NewProjectScopeForm(
            data,
            repositories=manageable_repositories(user).order_by("owner", "name"),
            every_repository=is_ingest_admin(user),
        ),
    )


def _scope_preview(scope_form: NewProjectScopeForm) -> dict:
    """What the scope selects, per repository; or the scope's errors."""
    if not scope_form.is_valid():
        errors = []
        for name, messages_ in scope_form.errors.items():
            label = scope_form[name].label if name in scope_form.fields else ""
            text = " ".join(str(m) for m in messages_)
            errors.append(
                gettext("%(field)s: %(errors)s") % {"field": label, "errors": text}
                if label
                else text
            )
        return {"errors": errors}
    scope = scope_form.chosen_scope()
    if scope is None:
        return {"empty_queue": True, "rows": [], "total": 0}
    rows = setup.scope_counts(scope)
    return {
        "rows": rows,
        "total": sum(n for _, n in rows),
        "all_repositories": not scope.repository_ids,
    }


@login_required
def project_create(request: AuthedRequest) -> HttpResponse:
    """A new project: name, taxonomy, K and policy, scope (with a preview), and members.

    Admins and users with the permission `annotator.add_project`. Anyone else gets a 403 page
    that says who may create projects and whom to ask (this page is outside every project, so
    it reveals nothing). Everything is made by `labeling.setup.create_project`, at once.
    """
    if not may_create_project(request.user):
        return render(request, "front/project_create_refused.html", status=403)
    if request.method != "POST":
        form, scope_form = _creation_forms(request)
        return _creation_page(request, form, scope_form)
    form, scope_form = _creation_forms(request, request.POST)
    if "preview" in request.POST:
        preview = _scope_preview(scope_form)
        if request.htmx:
            # 200 even for a refused scope: htmx swaps no error response, and the fragment
            # says what is wrong.
            return render(request, "front/_scope_preview.html", {"preview": preview})
        status = 400 if "errors" in preview else 200
        return _creation_page(
            request, form, scope_form, preview=preview, show_errors=False, status=status
        )
    # Both forms are checked, so every error shows at once.
    valid = form.is_valid()
    if scope_form.is_valid() and valid:
        data, scope_data = form.cleaned_data, scope_form.cleaned_data
        try:
            project = setup.create_project(
                request.user,
                name=data["name"],
                description=data["description"],
                taxonomy_version_id=data["taxonomy_version"].pk,
                k=data["annotations_per_issue"],
                policy=data["resolution_policy"],
                threshold=data["majority_threshold"],
                scope=scope_form.chosen_scope(),
                pilot_size=scope_data["pilot_size"],
                seed=scope_data["seed"],
                members=data.get("members") or [],
                stopping=form.configure_kwargs(),
            )
        except Refusal as refusal:
            # Beside the field at fault, on whichever of the two forms has it.
            add_to_form(scope_form if refusal.field in scope_form.fields else form, refusal)
        else:
            count = ProjectIssue.objects.filter(project=project).count()
            members = project.memberships.count()
            # Two counts, two plurals: each half is its own message.
            issues = ngettext("%(count)s issue in scope", "%(count)s issues in scope", count) % {
                "count": count
            }
            people = ngettext("%(count)s member", "%(count)s members", members) % {"count": members}
            messages.success(
                request,
                gettext("Project %(name)s created with %(issues)s and %(members)s.")
                % {"name": project.name, "issues": issues, "members": people},
            )
            if warning := setup.stopping_warning(project):
                messages.warning(request, warning)
            return redirect("project_detail", project_id=project.pk)
    return _creation_page(request, form, scope_form, status=400)


def _creation_page(
    request: HttpRequest,
    form: NewProjectForm,
    scope_form: NewProjectScopeForm,
    *,
    preview: dict | None = None,
    show_errors: bool = True,
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "front/project_create.html",
        {
            "form": form,
            "scope_form": scope_form,
            "preview": preview,
            "show_errors": show_errors,
            "every_repository": scope_form.every_repository,
        },
        status=status,
    )


@login_required
def project_detail(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id)
    return _project_page(request, membership)


def _project_page(
    request: HttpRequest,
    membership: Membership,
    *,
    invite_form: InviteForm | None = None,
    volunteer_form: VolunteerForm | None = None,
    pseudonym_form: tuple[int, PseudonymForm] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The project page; a lead's refused invite or account form comes back with its errors."""
    project = membership.project
    is_lead = membership.role in LEAD_ROLES
    counts = _project_counts([project.pk]).get(
        project.pk, {"total": 0, "final": 0, "done": 0, "disagreements": 0}
    )
    # Leads see final issues; others issues with all their labels (final or disputed: F5).
    shown = counts["final"] if is_lead else counts["done"]
    context = {
        "project": project,
        "membership": membership,
        "is_lead": is_lead,
        "counts": counts,
        "percent": round(100 * shown / counts["total"]) if counts["total"] else 0,
        "project_link_groups": grouped_links(membership),
    }
    if is_lead:
        # A refused rename comes back beside its member, with what the lead typed.
        refused = dict([pseudonym_form]) if pseudonym_form else {}
        context["members"] = [
            (member, refused.get(member.pk))
            for member in project.memberships.select_related("user")
        ]
        context["invites"] = project.invites.filter(used_at__isnull=True)[:20]
        roles = grantable_roles(membership.role, request.user.is_superuser)
        context["invite_form"] = invite_form or InviteForm(roles=roles, auto_id="invite_%s")
        context["volunteer_form"] = volunteer_form or VolunteerForm(
            roles=roles, auto_id="volunteer_%s"
        )
    return render(request, "front/project_detail.html", context, status=status)


@login_required
@require_POST
def create_invite(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    form = InviteForm(
        request.POST,
        roles=grantable_roles(membership.role, request.user.is_superuser),
        auto_id="invite_%s",
    )
    if not form.is_valid():
        return _project_page(request, membership, invite_form=form, status=400)
    _, token = Invite.issue_for(
        membership.project,
        form.cleaned_data["role"],
        request.user,
        email=form.cleaned_data["email"],
        days=form.cleaned_data["days"],
    )
    link = request.build_absolute_uri(reverse("accept_invite", args=[token]))
    # The link is shown once; only its hash is stored.
    messages.success(
        request, gettext("Invite link (shown once, single use): %(link)s") % {"link": link}
    )
    return redirect("project_detail", project_id=project_id)


@login_required
@require_POST
def add_volunteer(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    form = VolunteerForm(
        request.POST,
        roles=grantable_roles(membership.role, request.user.is_superuser),
        auto_id="volunteer_%s",
    )
    if form.is_valid():
        data = form.cleaned_data
        try:
            create_volunteer(
                membership.project, data["username"], data["password"], data["role"], data["email"]
            )
        except ValidationError as exc:  # a look-alike was created since the form's check
            form.add_error("username", exc)
        else:
            messages.success(
                request,
                gettext("Account %(username)s created as %(role)s.")
                % {"username": data["username"], "role": Role(data["role"]).label},
            )
            return redirect("project_detail", project_id=project_id)
    # Errors are shown beside their fields, in the form as the lead filled it.
    return _project_page(request, membership, volunteer_form=form, status=400)


@login_required
@require_POST
def rename_member(request: AuthedRequest, project_id: int, member_id: int) -> HttpResponse:
    """A lead changes a member's pseudonym (how exports and agreement figures name them)."""
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    member = get_object_or_404(Membership, pk=member_id, project=membership.project)
    form = PseudonymForm(request.POST, membership=member, prefix=f"member-{member.pk}")
    if form.is_valid():
        try:
            rename_pseudonym(member, form.cleaned_data["pseudonym"])
        except ValidationError as exc:
            form.add_error("pseudonym", exc)
        else:
            messages.success(
                request,
                gettext("%(username)s is now %(pseudonym)s.")
                % {"username": member.user.username, "pseudonym": member.pseudonym},
            )
            return redirect("project_detail", project_id=project_id)
    return _project_page(request, membership, pseudonym_form=(member.pk, form), status=400)
