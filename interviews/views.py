"""The interview page: codebook import/export, rankings, and their aggregation per group.

Every member may read it; leads and researchers (who run the interviews) change it.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, ngettext

from annotator.models import LEAD_ROLES, Project, Role
from annotator.permissions import membership_or_404
from interviews import codebook, rankings
from interviews.forms import CodebookImportForm, RankingForm
from interviews.models import CodebookEntry, Participant
from lib.requests import AuthedRequest

EDITOR_ROLES = (*LEAD_ROLES, Role.RESEARCHER)


def _record_ranking(project: Project, data: dict[str, Any]) -> str:
    with transaction.atomic():
        participant = Participant.objects.filter(project=project, code=data["participant"]).first()
        if participant is None:
            if not data["kind"]:
                raise rankings.RankingError("kind: " + gettext("a new participant needs a type"))
            participant = Participant.objects.create(
                project=project,
                code=data["participant"].strip(),
                kind=data["kind"],
                experience_text=data["experience"],
                experience=codebook.experience_group(data["experience"]),
            )
        issue_type = project.taxonomy_version.types().get(code=data["issue_type"])
        codes = [c for c in re.split(r"[,;>\s]+", data["themes"]) if c]
        rankings.record_ranking(participant, issue_type, codes)
    return ngettext(
        "Recorded %(participant)s's ranking of %(type)s (%(count)s theme).",
        "Recorded %(participant)s's ranking of %(type)s (%(count)s themes).",
        len(codes),
    ) % {"participant": participant.code, "type": issue_type.name, "count": len(codes)}


@login_required
def interviews(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id)
    project = membership.project
    can_edit = membership.role in EDITOR_ROLES
    import_form = CodebookImportForm()
    ranking_form = RankingForm(project.taxonomy_version)
    if request.method == "POST":
        membership_or_404(request.user, project_id, roles=EDITOR_ROLES)
        action = request.POST.get("action")
        if action in ("import", "import_rankings"):
            import_form = CodebookImportForm(request.POST, request.FILES)
            if import_form.is_valid():
                upload = import_form.cleaned_data["file"]
                try:
                    text = upload.read().decode("utf-8")
                    if action == "import":
                        replace = import_form.cleaned_data["replace"]
                        n = codebook.import_csv(project, text, replace=replace)
                        done = ngettext(
                            "Imported %(count)s codebook entry.",
                            "Imported %(count)s codebook entries.",
                            n,
                        )
                    else:
                        n = rankings.import_rankings_csv(project, text)
                        done = ngettext(
                            "Imported %(count)s ranking.", "Imported %(count)s rankings.", n
                        )
                except UnicodeDecodeError:
                    messages.error(request, gettext("%(file)s: not UTF-8") % {"file": upload.name})
                except (codebook.CodebookError, rankings.RankingError) as exc:
                    messages.error(request, f"{upload.name}, {exc}")
                else:
                    messages.success(request, done % {"count": n})
                    return redirect("interviews", project_id=project.pk)
        else:
            ranking_form = RankingForm(project.taxonomy_version, request.POST)
            if ranking_form.is_valid():
                try:
                    messages.success(request, _record_ranking(project, ranking_form.cleaned_data))
                except rankings.RankingError as exc:
                    ranking_form.add_error(None, str(exc))
                else:
                    return redirect("interviews", project_id=project.pk)
    entries = (
        CodebookEntry.objects.filter(project=project)
        .select_related("participant")
        .prefetch_related("nodes")
    )
    return render(
        request,
        "interviews/interviews.html",
        {
            "project": project,
            "can_edit": can_edit,
            "aggregates": rankings.aggregate_all(project),
            "entries": entries,
            "participants": Participant.objects.filter(project=project),
            "import_form": import_form,
            "ranking_form": ranking_form,
        },
    )


@login_required
def codebook_export(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id)
    response = HttpResponse(
        codebook.export_csv(membership.project), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="codebook.csv"'
    return response


@login_required
def rankings_export(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id)
    response = HttpResponse(
        rankings.export_rankings_csv(membership.project), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="rankings.csv"'
    return response
