"""Who sees which taxonomy versions: a project's history is its own.

Projects may start from the same taxonomy, but each edits it on its own: an edit's version
names the project that made it (`TaxonomyVersion.project`), with its note and author. So:

* a project sees the versions it used and their lineage: the version in use and every version
  before it, and the versions it made (by an edit, or a JSON file its lead imported) with theirs;
  a member of another project gets a 404 for them, on every page and export;
* within a project, leads see who made a version; other members see the author's pseudonym in
  the project, and nobody sees the name of someone outside the project;
* the global taxonomy page (`/taxonomy/`) shows public versions only: the study's taxonomy as
  loaded from its CSV files, and versions an administrator published (`is_published`, set in
  the admin). It opens on the newest published version, else on the newest loaded one. A
  signed-in user may also open there a version of a project they belong to; staff, any.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotator.models import LEAD_ROLES, Membership, Project
from taxonomy.models import TaxonomyVersion

NO_AUTHOR = "—"
OUTSIDER = _("someone outside this project")


def global_version() -> TaxonomyVersion | None:
    """What the global taxonomy page opens on, and what a new project starts from."""
    published = TaxonomyVersion.objects.filter(is_published=True)
    newest = published.order_by("-created_at", "-pk").first()
    if newest is None:
        loaded = TaxonomyVersion.objects.filter(origin=TaxonomyVersion.Origin.STUDY)
        newest = loaded.order_by("-created_at", "-pk").first()
    return newest


def _with_lineage(start_ids: Iterable[int]) -> set[int]:
    """The given versions and every version before each of them (parent links)."""
    ids: set[int] = set()
    frontier = {pk for pk in start_ids if pk is not None}
    while frontier:
        ids |= frontier
        parents = TaxonomyVersion.objects.filter(pk__in=frontier, parent__isnull=False)
        frontier = set(parents.values_list("parent_id", flat=True)) - ids
    return ids


def project_version_ids(project: Project) -> set[int]:
    made = TaxonomyVersion.objects.filter(project=project).values_list("pk", flat=True)
    return _with_lineage([project.taxonomy_version_id, *made])


def project_versions(project: Project) -> QuerySet[TaxonomyVersion]:
    """The project's versions, newest first."""
    return (
        TaxonomyVersion.objects.filter(pk__in=project_version_ids(project))
        .select_related("taxonomy", "created_by")
        .order_by("-created_at", "-pk")
    )


def visible_to(user: User) -> QuerySet[TaxonomyVersion]:
    """The versions a signed-in user may open on the global taxonomy page."""
    if user.is_staff:
        return TaxonomyVersion.objects.all()
    ids: set[int] = set()
    for project in Project.objects.filter(memberships__user=user).distinct():
        ids |= project_version_ids(project)
    return TaxonomyVersion.objects.filter(
        Q(pk__in=ids) | Q(is_published=True) | Q(origin=TaxonomyVersion.Origin.STUDY)
    )


def author_names(project: Project, versions: Iterable[TaxonomyVersion], viewer_role: str) -> dict:
    """Version pk → who made it, as this viewer may see it (see the module docstring)."""
    versions = list(versions)
    authors = {v.created_by_id for v in versions if v.created_by_id}
    members = {
        m.user_id: m
        for m in Membership.objects.filter(project=project, user_id__in=authors).select_related(
            "user"
        )
    }
    is_lead = viewer_role in LEAD_ROLES
    names = {}
    for v in versions:
        member = members.get(v.created_by_id) if v.created_by_id is not None else None
        if v.created_by_id is None:
            names[v.pk] = NO_AUTHOR
        elif member is None:
            names[v.pk] = str(OUTSIDER)
        elif is_lead:
            names[v.pk] = member.user.username
        else:
            names[v.pk] = member.pseudonym or gettext("member %(id)s") % {"id": member.pk}
    return names
