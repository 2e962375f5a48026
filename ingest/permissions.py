"""Who may manage which repositories: add one, change its API URL, sync it, see its runs.

Adding a repository makes the server fetch a URL with its forge tokens, so it is not for every
lead of every project. The rule:

* Admins (staff or superusers) may manage every repository.
* A lead (or project admin) may manage the repositories a project they lead *uses*: those named
  in the scope its setup page last applied (`Project.scope["repository_ids"]`), and those whose
  issues are in its queue. A lead adds a repository *for* one of their projects, which puts it in
  that project's scope (`attach`). A lead's scope (the setup page, an upload of issues) takes
  in only repositories they manage or the project holds (`scope_repositories`).
* Everyone else, and everything else, gets 404 (never 403: no hint that a repository or a run
  exists). A sync run is visible exactly to those who may sync its repository.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404

from annotator.models import LEAD_ROLES, Membership, Project
from ingest.models import Issue, Repository, SyncRun


def is_ingest_admin(user: User | AnonymousUser) -> bool:
    return bool(user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser))


def led_projects(user: User | AnonymousUser) -> QuerySet[Project]:
    """The projects the user leads (lead or project-admin membership)."""
    if not user.is_authenticated:
        return Project.objects.none()
    led = Membership.objects.filter(user=user, role__in=LEAD_ROLES).values("project_id")
    return Project.objects.filter(pk__in=led)


def may_open_ingest(user: User | AnonymousUser) -> bool:
    """The repositories page: admins, and leads of any project (who see their own only)."""
    return is_ingest_admin(user) or led_projects(user).exists()


def _scope_ids(projects: QuerySet[Project]) -> set[int]:
    return _ids_in(projects.values_list("scope", flat=True))


def _ids_in(scopes: Iterable[dict[str, Any] | None]) -> set[int]:
    ids: set[int] = set()
    for scope in scopes:
        for value in (scope or {}).get("repository_ids") or []:
            if isinstance(value, int) and not isinstance(value, bool):
                ids.add(value)
    return ids


def manageable_repositories(user: User | AnonymousUser) -> QuerySet[Repository]:
    """The repositories the user may manage (see the module docstring)."""
    if is_ingest_admin(user):
        return Repository.objects.all()
    projects = led_projects(user)
    # Through the queue's reverse relation (labeling.ProjectIssue): no import of the app above.
    in_queue = Issue.objects.filter(repository=OuterRef("pk"), project_issues__project__in=projects)
    return Repository.objects.filter(Q(pk__in=_scope_ids(projects)) | Q(Exists(in_queue)))


def may_manage(user: User | AnonymousUser, repository: Repository) -> bool:
    return manageable_repositories(user).filter(pk=repository.pk).exists()


def scope_repositories(user: User | AnonymousUser, project: Project) -> QuerySet[Repository]:
    """The repositories a lead may put in the project's scope (the setup page's scope form) or
    upload issues of (`ingest.uploads`): those they may manage, and those the project already
    holds (a scope is what lets a lead sync a repository, so choosing one must not be a way to
    take over a repository another project uses)."""
    held = Q(issues__project_issues__project=project) | Q(pk__in=_ids_in([project.scope]))
    manageable = manageable_repositories(user).values("pk")
    return (
        Repository.objects.filter(Q(pk__in=manageable) | held).distinct().order_by("owner", "name")
    )


def may_add_repository(user: User | AnonymousUser, project: Project) -> bool:
    """Whether the user may add a new repository for the project (`NewRepositoryForm` offers the
    projects they lead; an admin any): one that no project uses yet joins this one's scope."""
    return is_ingest_admin(user) or led_projects(user).filter(pk=project.pk).exists()


def repository_or_404(user: User | AnonymousUser, repository_id: int) -> Repository:
    repository = manageable_repositories(user).filter(pk=repository_id).first()
    if repository is None:
        raise Http404
    return repository


def run_or_404(user: User | AnonymousUser, run_id: int) -> SyncRun:
    """A sync run, for those who may sync its repository."""
    run = (
        SyncRun.objects.select_related("repository")
        .filter(pk=run_id, repository__in=manageable_repositories(user))
        .first()
    )
    if run is None:
        raise Http404
    return run


@transaction.atomic
def attach(project: Project, repository: Repository) -> None:
    """Put a repository in a project's scope, so the project uses it (and its leads manage it).

    A scope applied with no repository ticked means "all of them"; ticking one would narrow
    it, so the repositories the project already holds issues of are ticked with it.
    """
    project = Project.objects.select_for_update().get(pk=project.pk)
    scope = dict(project.scope or {})
    ids = [i for i in scope.get("repository_ids") or [] if isinstance(i, int)]
    if not ids:
        ids = sorted(
            set(
                Issue.objects.filter(project_issues__project=project).values_list(
                    "repository_id", flat=True
                )
            )
        )
    if repository.pk not in ids:
        ids.append(repository.pk)
    scope["repository_ids"] = ids
    project.scope = scope
    project.save(update_fields=["scope"])
