"""Who may do what in the labeling workflow (the project gate itself is
`annotator.permissions.membership_or_404`)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.models import Project, Role
from ingest.models import Repository
from ingest.permissions import manageable_repositories

# Who may label: leads label the pilot and can take part like any volunteer.
LABELER_ROLES = (Role.ANNOTATOR, Role.LEAD, Role.ADMIN)
# Who proposes and votes on taxonomy changes: the people who label (researchers only read).
VOTING_ROLES = (Role.ANNOTATOR, Role.LEAD, Role.ADMIN)
# Who reads the issue list and an issue's labels: it shows label counts, statuses and final
# labels, which annotators must not see (they stay blind until an issue is final).
ISSUE_LIST_ROLES = (Role.LEAD, Role.ADMIN, Role.RESEARCHER)


def scope_repositories(user, project: Project) -> QuerySet[Repository]:
    """The repositories a lead may put in the project's scope: those they may manage, and those
    the project already holds (a scope is what lets a lead sync a repository, so choosing one
    must not be a way to take over a repository another project uses)."""
    held = Q(issues__project_issues__project=project) | Q(
        pk__in=(project.scope or {}).get("repository_ids") or []
    )
    manageable = manageable_repositories(user).values("pk")
    return (
        Repository.objects.filter(Q(pk__in=manageable) | held).distinct().order_by("owner", "name")
    )
