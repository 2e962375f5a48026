"""Proposals of new themes and sub-themes, decided by the study's rule: everyone agrees.

A proposal is accepted only when every voting member approves: every annotator of the project,
and every lead who chose to vote. One dissent keeps it open; a lead may reject it with a reason.
Acceptance adds the node in a new taxonomy version and re-pins the project to it, so the node is
offered on the next issue. The proposer's own vote is an approval.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotator.models import LEAD_ROLES, Project, Role
from labeling.models import Annotation, Proposal, ProposalVote
from taxonomy import edits
from taxonomy.lineage import node_in_version
from taxonomy.models import TaxonomyNode

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class ProposalError(ValueError):
    """A proposal or vote that cannot be made; the message names the field."""


def _parent_in_project(project: Project, parent_code: str) -> TaxonomyNode:
    parent = project.taxonomy_version.nodes.filter(code=parent_code.strip()).first()
    if parent is None:
        raise ProposalError(
            "parent_code: "
            + gettext("no node %(code)s in %(version)s")
            % {"code": repr(parent_code), "version": project.taxonomy_version}
        )
    if parent.level == TaxonomyNode.Level.SUB_THEME:
        raise ProposalError(
            "parent_code: "
            + gettext("%(code)s is a sub-theme; propose under a type or a theme")
            % {"code": parent.code}
        )
    return parent


def propose(
    project: Project,
    user: User,
    *,
    name: str,
    parent_code: str,
    description: str = "",
    issues: Iterable = (),
    source_annotation: Annotation | None = None,
) -> Proposal:
    """Record a proposal of a theme (parent is a type) or sub-theme (parent is a theme)."""
    name = name.strip()
    if not name:
        raise ProposalError("name: " + gettext("a proposal needs a name"))
    if len(name) > 300:
        raise ProposalError("name: " + gettext("at most %(most)s characters") % {"most": 300})
    parent = _parent_in_project(project, parent_code)
    with transaction.atomic():
        proposal = Proposal.objects.create(
            project=project,
            name=name,
            description=description.strip(),
            parent=parent,
            proposed_by=user,
            source_annotation=source_annotation,
        )
        issue_list = list(issues)
        if issue_list:
            proposal.issues.set(issue_list)
        ProposalVote.objects.create(proposal=proposal, voter=user, approve=True)
    return proposal


def _split_text(text: str) -> tuple[str, str]:
    """First line is the name ("Name: description" also works); the rest is the description."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first, rest = lines[0], "\n".join(lines[1:])
    if ":" in first and not rest:
        name, _, desc = first.partition(":")
        if name.strip() and desc.strip():
            return name.strip()[:300], desc.strip()
    return first[:300], rest


def proposal_from_annotation(annotation: Annotation) -> Proposal | None:
    """A pending proposal from an annotation's "propose a new category" text, once.

    The parent is the annotation's theme (so a sub-theme is proposed) or, with only a type, the
    type. Returns None when there is nothing to propose or it was imported already.
    """
    text = (annotation.proposed_category or "").strip()
    if not text or Proposal.objects.filter(source_annotation=annotation).exists():
        return None
    project = annotation.project
    parent = annotation.theme or annotation.issue_type
    if parent is None:
        return None
    parent = node_in_version(parent, project.taxonomy_version, fallback_to_parent=True)
    if parent is None:
        return None
    name, description = _split_text(text)
    return propose(
        project,
        annotation.annotator,
        name=name,
        parent_code=parent.code,
        description=description,
        issues=[annotation.issue],
        source_annotation=annotation,
    )


def proposals_from_annotations(project: Project) -> list[Proposal]:
    """Import every current annotation's proposed category not imported yet."""
    annotations = (
        Annotation.objects.filter(project=project, is_current=True)
        .exclude(proposed_category="")
        .filter(taxonomy_proposal__isnull=True)
        .select_related("theme", "issue_type", "issue", "annotator", "project")
        .order_by("created_at", "pk")
    )
    created = []
    for annotation in annotations:
        proposal = proposal_from_annotation(annotation)
        if proposal is not None:
            created.append(proposal)
    return created


def voters(project: Project, proposal: Proposal | None = None) -> list:
    """Voting members: every annotator, plus leads who voted on this proposal."""
    from django.contrib.auth.models import User

    ids = set(project.memberships.filter(role=Role.ANNOTATOR).values_list("user_id", flat=True))
    if proposal is not None:
        lead_ids = project.memberships.filter(role__in=LEAD_ROLES).values_list("user_id", flat=True)
        ids |= set(proposal.votes.filter(voter_id__in=lead_ids).values_list("voter_id", flat=True))
    return list(User.objects.filter(pk__in=ids).order_by("username"))


def tally(proposal: Proposal) -> dict:
    """Who approved, who dissented, who has not voted, and whether that is unanimous."""
    members = voters(proposal.project, proposal)
    votes = {v.voter_id: v for v in proposal.votes.all()}
    approved = [u for u in members if u.pk in votes and votes[u.pk].approve]
    dissent = [u for u in members if u.pk in votes and not votes[u.pk].approve]
    waiting = [u for u in members if u.pk not in votes]
    return {
        "voters": members,
        "approved": approved,
        "dissent": dissent,
        "waiting": waiting,
        "unanimous": bool(members) and len(approved) == len(members),
    }


def vote(proposal: Proposal, user: User, approve: bool, comment: str = "") -> Proposal:
    """Record (or change) a vote; the last approval needed accepts the proposal."""
    role = proposal.project.role_of(user)
    if role not in (Role.ANNOTATOR, *LEAD_ROLES):
        raise ProposalError("vote: " + gettext("only annotators and leads vote on proposals"))
    with transaction.atomic():
        proposal = Proposal.objects.select_for_update().get(pk=proposal.pk)
        if proposal.status != Proposal.Status.PENDING:
            raise ProposalError(
                "vote: "
                + gettext("this proposal is already %(status)s")
                % {"status": proposal.get_status_display()}
            )
        ProposalVote.objects.update_or_create(
            proposal=proposal, voter=user, defaults={"approve": approve, "comment": comment}
        )
        if tally(proposal)["unanimous"]:
            accept(proposal, user)
    proposal.refresh_from_db()
    return proposal


def accept(proposal: Proposal, user: User) -> Proposal:
    """Add the proposed node in a new version of the project's taxonomy and re-pin the project."""
    with transaction.atomic():
        project = proposal.project
        project.refresh_from_db(fields=["taxonomy_version"])
        parent = node_in_version(proposal.parent, project.taxonomy_version)
        if parent is None:
            raise ProposalError(
                "parent: "
                + gettext("%(code)s no longer exists in %(version)s")
                % {"code": proposal.parent.code, "version": project.taxonomy_version}
            )
        _, node = edits.add(
            project,
            user,
            parent,
            proposal.name,
            proposal.description,
            note=f"Accepted proposal “{proposal.name}” under {parent.code} (unanimous).",
        )
        proposal.status = Proposal.Status.ACCEPTED
        proposal.created_node = node
        proposal.decided_by = user
        proposal.decided_at = timezone.now()
        proposal.save(update_fields=["status", "created_node", "decided_by", "decided_at"])
    return proposal


def reject(proposal: Proposal, user: User, reason: str) -> Proposal:
    """A lead closes a proposal with a reason."""
    if proposal.project.role_of(user) not in LEAD_ROLES and not user.is_superuser:
        raise ProposalError("reject: " + gettext("only a lead can reject a proposal"))
    if not reason.strip():
        raise ProposalError("reason: " + gettext("say why the proposal is rejected"))
    with transaction.atomic():
        proposal = Proposal.objects.select_for_update().get(pk=proposal.pk)
        if proposal.status != Proposal.Status.PENDING:
            raise ProposalError(
                "reject: "
                + gettext("this proposal is already %(status)s")
                % {"status": proposal.get_status_display()}
            )
        proposal.status = Proposal.Status.REJECTED
        proposal.rejection_reason = reason.strip()
        proposal.decided_by = user
        proposal.decided_at = timezone.now()
        proposal.save()
    return proposal
