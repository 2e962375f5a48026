"""Who may export, see and download which exports of a project."""

from __future__ import annotations

from django.db.models import QuerySet

from annotator.models import LEAD_ROLES, Membership, Role
from dataset.models import ExportJob

# Exports hold every annotation (pseudonymous): not for annotators, who are blind to others.
EXPORT_ROLES = (Role.LEAD, Role.ADMIN, Role.RESEARCHER)


def can_use_real_names(membership: Membership) -> bool:
    return membership.role == Role.ADMIN or membership.user.is_superuser


def can_export_everything(membership: Membership) -> bool:
    """Leads and admins may export every issue; a researcher's export holds the final issues
    only, as the API shows them."""
    return membership.role in LEAD_ROLES or membership.user.is_superuser


def visible_exports(membership: Membership) -> QuerySet[ExportJob]:
    """The project's export jobs this member may see: exports with real names are for admins,
    exports of every issue for leads and admins."""
    jobs = ExportJob.objects.filter(project=membership.project)
    if not can_use_real_names(membership):
        jobs = jobs.filter(real_names=False)
    if not can_export_everything(membership):
        jobs = jobs.filter(everything=False)
    return jobs


# Releases hold the final issues only (the researcher's view): readable by whoever may export;
# only leads and admins freeze one.
RELEASE_ROLES = EXPORT_ROLES
RELEASE_CREATE_ROLES = LEAD_ROLES


def can_create_release(membership: Membership) -> bool:
    return membership.role in RELEASE_CREATE_ROLES or membership.user.is_superuser


# The filter-recall report (dataset.recall): leads and admins draw probes; researchers read the
# report, which shows counts and estimates only, never which issues are probes.
RECALL_ROLES = EXPORT_ROLES
RECALL_DRAW_ROLES = LEAD_ROLES


def can_draw_probes(membership: Membership) -> bool:
    return membership.role in RECALL_DRAW_ROLES or membership.user.is_superuser


# Uploading issues (dataset.uploads): it writes issues and repositories and fills the queue, so
# leads and admins only (superusers act as project admins).
UPLOAD_ROLES = LEAD_ROLES
