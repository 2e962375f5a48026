"""Project pages of the evolving taxonomy: proposals and votes, edits, versions and their diff,
JSON export/import, and the lead's detail mapping. Views parse, call a service, render.

Visibility: annotators and leads see proposals and vote; only leads edit, reject, import and
review details (summaries are annotations, which annotators may not see of each other). A
project sees only its own taxonomy history (`labeling.taxonomy_history`): another project's versions
are a 404 here, and authors are named to leads, pseudonymous to other members.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_POST

from annotator.models import LEAD_ROLES, Membership, Project
from annotator.permissions import membership_or_404
from ingest.models import Issue
from labeling import details as detail_service
from labeling import proposals
from labeling import taxonomy_history as history
from labeling.models import DetailEntry, ProjectIssue, Proposal
from labeling.permissions import VOTING_ROLES
from lib.inputlimits import row_id
from lib.requests import AuthedRequest
from taxonomy import detail_files, edits, files
from taxonomy.diff import diff_versions
from taxonomy.forms import EditForm, ImportForm, MoveDetailForm, ProposalForm, RejectForm
from taxonomy.lineage import ancestors
from taxonomy.models import TaxonomyNode, TaxonomyVersion
from taxonomy.search import build_tree, search_nodes


def _proposal_rows(
    project: Project, user: User, is_lead: bool, queryset: QuerySet[Proposal]
) -> list[dict]:
    final = set(
        ProjectIssue.objects.filter(project=project, status=ProjectIssue.Status.FINAL).values_list(
            "issue_id", flat=True
        )
    )
    rows = []
    for p in queryset:
        mine = p.proposed_by_id == user.pk
        tally = proposals.tally(p)
        my_vote = next((v for v in p.votes.all() if v.voter_id == user.pk), None)
        # Blindness: a linked issue tells that someone labeled it; annotators see only final
        # ones (or their own proposal's). They see how many voted, not who: the proposer's
        # own approval would name them. A proposal made from a label sits under that label's
        # theme, so its place is shown to them only once the labeled issue is final.
        issues = [i for i in p.issues.all() if is_lead or mine or i.pk in final]
        from_open_label = (
            p.source_annotation is not None and p.source_annotation.issue_id not in final
        )
        rows.append(
            {
                "p": p,
                "tally": tally,
                "my_vote": my_vote,
                "issues": issues,
                "show_proposer": is_lead or mine,
                "show_voters": is_lead,
                "show_parent": is_lead or mine or not from_open_label,
                "mine": mine,
            }
        )
    return rows


def _proposal_context(
    request: AuthedRequest, membership: Membership, form: ProposalForm | None = None
) -> dict:
    project = membership.project
    is_lead = membership.role in LEAD_ROLES
    qs = (
        Proposal.objects.filter(project=project)
        .select_related("parent", "proposed_by", "created_node", "decided_by", "source_annotation")
        .prefetch_related("votes", "issues")
    )
    return {
        "project": project,
        "is_lead": is_lead,
        "pending": _proposal_rows(project, request.user, is_lead, qs.filter(status="pending")),
        "decided": _proposal_rows(project, request.user, is_lead, qs.exclude(status="pending")),
        "form": form or ProposalForm(project.taxonomy_version),
        "reject_form": RejectForm(),
    }


@login_required
def proposal_list(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=VOTING_ROLES)
    project = membership.project
    form = None
    if request.method == "POST":
        form = ProposalForm(project.taxonomy_version, request.POST)
        if form.is_valid():
            urls = [u.strip() for u in form.cleaned_data["issue_urls"].splitlines() if u.strip()]
            issues = list(Issue.objects.filter(project_issues__project=project, url__in=urls))
            unknown = sorted(set(urls) - {i.url for i in issues})
            if unknown:
                form.add_error(
                    "issue_urls",
                    gettext("not an issue of this project: %(url)s") % {"url": unknown[0]},
                )
            else:
                try:
                    proposals.propose(
                        project,
                        request.user,
                        name=form.cleaned_data["name"],
                        parent_code=form.cleaned_data["parent"].code,
                        description=form.cleaned_data["description"],
                        issues=issues,
                    )
                except proposals.ProposalError as exc:
                    form.add_error(None, str(exc))
                else:
                    messages.success(
                        request, gettext("Proposal recorded; the other volunteers can vote.")
                    )
                    return redirect("taxonomy_proposals", project_id=project.pk)
    return render(
        request, "front/taxonomy/proposals.html", _proposal_context(request, membership, form)
    )


@login_required
@require_POST
def proposal_vote(request: AuthedRequest, project_id: int, proposal_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=VOTING_ROLES)
    proposal = get_object_or_404(Proposal, pk=proposal_id, project=membership.project)
    approve = request.POST.get("approve") == "yes"
    try:
        proposal = proposals.vote(proposal, request.user, approve, request.POST.get("comment", ""))
    except proposals.ProposalError as exc:
        messages.error(request, str(exc))
    else:
        if proposal.status == Proposal.Status.ACCEPTED and proposal.created_node is not None:
            messages.success(
                request,
                gettext("Unanimous: “%(name)s” is now %(code)s in %(version)s.")
                % {
                    "name": proposal.name,
                    "code": proposal.created_node.code,
                    "version": proposal.created_node.version,
                },
            )
        else:
            messages.success(request, gettext("Vote recorded."))
    return redirect("taxonomy_proposals", project_id=project_id)


@login_required
@require_POST
def proposal_reject(request: AuthedRequest, project_id: int, proposal_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    proposal = get_object_or_404(Proposal, pk=proposal_id, project=membership.project)
    form = RejectForm(request.POST)
    if not form.is_valid():
        messages.error(request, "reason: " + gettext("say why the proposal is rejected"))
    else:
        try:
            proposals.reject(proposal, request.user, form.cleaned_data["reason"])
            messages.success(request, gettext("Rejected “%(name)s”.") % {"name": proposal.name})
        except proposals.ProposalError as exc:
            messages.error(request, str(exc))
    return redirect("taxonomy_proposals", project_id=project_id)


@login_required
@require_POST
def proposals_import(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    created = proposals.proposals_from_annotations(membership.project)
    messages.success(
        request,
        ngettext(
            "Imported %(count)s proposal from labels.",
            "Imported %(count)s proposals from labels.",
            len(created),
        )
        % {"count": len(created)},
    )
    return redirect("taxonomy_proposals", project_id=project_id)


def _project_versions(project: Project) -> list[TaxonomyVersion]:
    return list(history.project_versions(project))


@login_required
def version_list(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id)
    project = membership.project
    versions = _project_versions(project)
    authors = history.author_names(project, versions, membership.role)
    lineage_ids = {v.pk for v in ancestors(project.taxonomy_version)}
    return render(
        request,
        "front/taxonomy/versions.html",
        {
            "project": project,
            "is_lead": membership.role in LEAD_ROLES,
            "rows": [
                {
                    "v": v,
                    "author": authors[v.pk],
                    "type_codes": [t.code for t in v.types().order_by("position")],
                }
                for v in versions
            ],
            "lineage_ids": lineage_ids,
            "import_form": ImportForm(),
        },
    )


@login_required
def version_diff(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id)
    project = membership.project
    versions = _project_versions(project)
    by_pk = {v.pk: v for v in versions}
    current = project.taxonomy_version
    try:
        new = by_pk[int(request.GET.get("new") or current.pk)]
        default_old = new.parent_id if new.parent_id in by_pk else new.pk
        old = by_pk[int(request.GET.get("old") or default_old)]
    except (KeyError, ValueError):
        raise Http404 from None
    return render(
        request,
        "front/taxonomy/diff.html",
        {"project": project, "versions": versions, "diff": diff_versions(old, new)},
    )


def _project_version_or_404(project: Project, version_id: int) -> TaxonomyVersion:
    if version_id not in history.project_version_ids(project):
        raise Http404
    return get_object_or_404(TaxonomyVersion.objects.select_related("taxonomy"), pk=version_id)


@login_required
def version_export(request: AuthedRequest, project_id: int, version_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id)
    version = _project_version_or_404(membership.project, version_id)
    response = HttpResponse(files.export_json(version), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="taxonomy-v{version.number}.json"'
    return response


@login_required
def version_csv(
    request: AuthedRequest, project_id: int, version_id: int, type_code: str
) -> HttpResponse:
    """One type of a version as the study's detail file (what `load_taxonomy` reads)."""
    membership = membership_or_404(request.user, project_id)
    version = _project_version_or_404(membership.project, version_id)
    try:
        text = detail_files.export_version_csv(version, type_code)
    except detail_service.DetailError:
        raise Http404 from None
    name = detail_files.study_file_name(type_code)
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="v{version.number}-{name}"'
    return response


@login_required
@require_POST
def version_import(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "file: " + gettext("choose a taxonomy JSON file"))
    else:
        upload = form.cleaned_data["file"]
        try:
            version = files.import_json(
                upload.read(),
                source=f"uploaded {upload.name}",
                user=request.user,
                project=membership.project,
            )
        except files.TaxonomyJSONError as exc:
            messages.error(request, f"{upload.name}: {exc}")
        else:
            count = version.nodes.count()
            messages.success(
                request,
                ngettext(
                    "Imported %(version)s (%(count)s node).",
                    "Imported %(version)s (%(count)s nodes).",
                    count,
                )
                % {"version": version, "count": count},
            )
    return redirect("taxonomy_versions", project_id=project_id)


def _apply_edit(
    project: Project, user: User, data: dict[str, Any]
) -> tuple[TaxonomyVersion, TaxonomyNode]:
    op, node, other = data["operation"], data["node"], data["other"]
    name, description = data["name"].strip(), data["description"]
    if op == "rename":
        return edits.rename(project, user, node, name, description or None)
    if op == "move":
        return edits.move(project, user, node, other)
    if op == "merge":
        return edits.merge(project, user, node, other)
    if op == "split":
        lines = [d.strip() for d in data["details"].splitlines() if d.strip()]
        return edits.split(project, user, node, name, description=description, details=lines)
    return edits.add(project, user, node, name, description)


@login_required
def edit(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    project = membership.project
    version = project.taxonomy_version
    form = EditForm(version)
    error = ""
    if request.method == "POST":
        # Codes are looked up in the version in use, so a stale page is caught first.
        if request.POST.get("based_on") != str(version.pk):
            error = str(edits.StaleVersionError())
        else:
            form = EditForm(version, request.POST)
            if form.is_valid():
                try:
                    new_version, _ = _apply_edit(project, request.user, form.cleaned_data)
                except edits.EditError as exc:
                    error = str(exc)
                else:
                    messages.success(request, f"{new_version}: {new_version.note}")
                    diff_url = reverse("taxonomy_diff", kwargs={"project_id": project.pk})
                    return redirect(f"{diff_url}?old={version.pk}&new={new_version.pk}")
    nodes = list(version.nodes.order_by("level", "code").values("code", "name", "level", "details"))
    return render(
        request,
        "front/taxonomy/edit.html",
        {"project": project, "version": version, "form": form, "error": error, "nodes": nodes},
    )


@login_required
def detail_mapping(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    project = membership.project
    version = project.taxonomy_version
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "sync":
                n = detail_service.sync_entries(project)
                messages.success(
                    request,
                    ngettext(
                        "Collected %(count)s new summary.", "Collected %(count)s new summaries.", n
                    )
                    % {"count": n},
                )
            elif action == "move":
                form = MoveDetailForm(version, request.POST)
                if not form.is_valid():
                    raise detail_service.DetailError("node: " + gettext("choose a sub-theme"))
                entry = get_object_or_404(
                    DetailEntry, pk=form.cleaned_data["entry"], project=project
                )
                detail_service.move_entry(entry, form.cleaned_data["node"], request.user)
                messages.success(
                    request,
                    gettext("Moved to %(code)s.") % {"code": form.cleaned_data["node"].code},
                )
            elif action == "merge":
                ids = [i for i in map(row_id, request.POST.getlist("entries")) if i]
                chosen = list(DetailEntry.objects.filter(project=project, pk__in=ids))
                if len(chosen) < 2:
                    raise detail_service.DetailError(
                        "entries: " + gettext("tick at least two summaries")
                    )
                chosen.sort(key=lambda e: e.pk)
                detail_service.merge_entries(
                    chosen[0], chosen[1:], request.user, request.POST.get("text", "")
                )
                messages.success(
                    request,
                    gettext("Merged %(count)s summaries into one.") % {"count": len(chosen)},
                )
        except detail_service.DetailError as exc:
            messages.error(request, str(exc))
        return redirect("taxonomy_details", project_id=project.pk)
    groups = [g for g in detail_service.grouped(project) if g.entries]
    return render(
        request,
        "front/taxonomy/details.html",
        {
            "project": project,
            "version": version,
            "groups": groups,
            "move_form": MoveDetailForm(version, auto_id=False),
            "entry_count": sum(len(g.entries) for g in groups),
            "types": version.types().order_by("position"),
        },
    )


@login_required
def detail_csv(request: AuthedRequest, project_id: int, type_code: str) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    try:
        text = detail_service.export_detail_csv(membership.project, type_code)
    except detail_service.DetailError:
        raise Http404 from None
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    name = detail_files.study_file_name(type_code)
    response["Content-Disposition"] = f'attachment; filename="project-{name}"'
    return response


# The global taxonomy page (/taxonomy/): public versions, and to members their projects' versions.


@login_required
def taxonomy_latest(request: AuthedRequest) -> HttpResponse:
    version = history.global_version()
    if version is None:
        return render(request, "front/taxonomy/empty.html")
    return redirect("taxonomy_version", version_id=version.pk)


@login_required
def taxonomy_version_detail(request: AuthedRequest, version_id: int) -> HttpResponse:
    visible = history.visible_to(request.user).select_related("taxonomy")
    version = get_object_or_404(visible, pk=version_id)
    query = request.GET.get("q", "").strip()
    context = {
        "version": version,
        "query": query,
        "versions": visible.order_by("taxonomy__name", "number"),
    }
    if query:
        context["results"] = search_nodes(version, query)
    else:
        context["tree"] = build_tree(version)
    template = (
        "front/taxonomy/_results.html" if request.htmx else "front/taxonomy/version_detail.html"
    )
    return render(request, template, context)
