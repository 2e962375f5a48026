"""Ingest pages: repositories with their syncs, a sync run's live progress, and Table I.

Who may see and do what is `ingest.permissions`: admins manage every repository, a lead the
repositories of the projects they lead; everyone else gets 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from ingest.forges import redact
from ingest.forms import NewRepositoryForm, RepositoryForm
from ingest.models import SyncRun, labeled_figures
from ingest.permissions import (
    attach,
    manageable_repositories,
    may_open_ingest,
    repository_or_404,
    run_or_404,
)
from ingest.runs import start_sync
from lib.requests import AuthedRequest


@login_required
def repositories(request: AuthedRequest) -> HttpResponse:
    if not may_open_ingest(request.user):
        raise Http404
    form = NewRepositoryForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            repo = form.save()
            project = form.cleaned_data.get("project")
            if project is not None:
                attach(project, repo)
        if project is not None:
            added = gettext("Added %(repository)s for %(project)s.")
        else:
            added = gettext("Added %(repository)s.")
        messages.success(request, added % {"repository": repo, "project": project})
        return redirect("repositories")
    repos = (
        manageable_repositories(request.user)
        .annotate(
            n_issues=Count("issues"),
            # A toolkit repository has no keyword filter: all its issues are kept.
            n_kept=Count("issues", filter=Q(issues__filter_status__in=("kept", "not_filtered"))),
            n_out=Count("issues", filter=Q(issues__filter_status="filtered_out")),
            n_hydrating=Count("issues", filter=Q(issues__fetched_at__isnull=True)),
            # A subquery, not a second join: a join would multiply the issue counts by the runs.
            last_run_id=Subquery(
                SyncRun.objects.filter(repository=OuterRef("pk")).order_by("-id").values("id")[:1]
            ),
        )
        .select_related("keyword_set")
    )
    runs = SyncRun.objects.in_bulk([r.last_run_id for r in repos if r.last_run_id])
    rows = [(repo, runs.get(repo.last_run_id)) for repo in repos]
    return render(request, "ingest/repositories.html", {"rows": rows, "form": form})


@login_required
def repository_edit(request: AuthedRequest, repository_id: int) -> HttpResponse:
    """A repository's settings, its API URL among them (validated like a new one's)."""
    repo = repository_or_404(request.user, repository_id)
    form = RepositoryForm(request.POST or None, instance=repo)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, gettext("Saved %(repository)s.") % {"repository": repo})
        return redirect("repositories")
    return render(request, "ingest/repository.html", {"repository": repo, "form": form})


@login_required
@require_POST
def repository_sync(request: AuthedRequest, repository_id: int) -> HttpResponse:
    repo = repository_or_404(request.user, repository_id)
    if repo.is_uploaded:
        messages.info(
            request,
            gettext("%(repository)s holds uploaded issues: there is no forge to sync from.")
            % {"repository": repo},
        )
        return redirect("repositories")
    # A hydration of imported URLs may run beside a sync; only another sync is in the way.
    active = repo.sync_runs.filter(status__in=SyncRun.ACTIVE, kind=SyncRun.Kind.SYNC).first()
    if active is not None:
        under_way = gettext("A sync of %(repository)s is already under way.")
        messages.info(request, under_way % {"repository": repo})
        return redirect("sync_run", run_id=active.pk)
    run = start_sync(repo, full=request.POST.get("full") == "1")
    return redirect("sync_run", run_id=run.pk)


@login_required
def sync_run(request: AuthedRequest, run_id: int) -> HttpResponse:
    run = run_or_404(request.user, run_id)
    # Redacted again as shown: a run stored before redaction existed may hold a token.
    figures = [(k, redact(v) if isinstance(v, str) else v) for k, v in labeled_figures(run)]
    errors = [
        {"at": e.get("at", ""), "message": redact(str(e.get("message", "")))}
        for e in run.errors
        if isinstance(e, dict)
    ]
    context = {
        "run": run,
        "figures": figures,
        "errors": errors,
        # Why a failed run stopped: its last error.
        "reason": errors[-1]["message"] if errors else "",
    }
    template = "ingest/_run_progress.html" if request.htmx else "ingest/sync_run.html"
    return render(request, template, context)
