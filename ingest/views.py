"""Ingest pages: repositories with their syncs, a sync run's live progress, and Table I."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, OuterRef, Q, Subquery
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotator.models import LEAD_ROLES, Membership
from ingest.forms import RepositoryForm
from ingest.models import Repository, SyncRun
from ingest.sync import start_sync


def _require_ingest_manager(user) -> None:
    """Staff, or a lead of any project; everyone else gets 404."""
    if not user.is_authenticated:
        raise Http404
    if user.is_staff or user.is_superuser:
        return
    if not Membership.objects.filter(user=user, role__in=LEAD_ROLES).exists():
        raise Http404


@login_required
def repositories(request):
    _require_ingest_manager(request.user)
    form = RepositoryForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        repo = form.save()
        messages.success(request, f"Added {repo}.")
        return redirect("repositories")
    repos = Repository.objects.annotate(
        n_issues=Count("issues"),
        n_kept=Count("issues", filter=Q(issues__filter_status="kept")),
        n_out=Count("issues", filter=Q(issues__filter_status="filtered_out")),
        n_hydrating=Count("issues", filter=Q(issues__fetched_at__isnull=True)),
        # A subquery, not a second join: a join would multiply the issue counts by the runs.
        last_run_id=Subquery(
            SyncRun.objects.filter(repository=OuterRef("pk")).order_by("-id").values("id")[:1]
        ),
    ).select_related("keyword_set")
    runs = SyncRun.objects.in_bulk([r.last_run_id for r in repos if r.last_run_id])
    rows = [(repo, runs.get(repo.last_run_id)) for repo in repos]
    return render(request, "ingest/repositories.html", {"rows": rows, "form": form})


@login_required
@require_POST
def repository_sync(request, repository_id: int):
    _require_ingest_manager(request.user)
    repo = get_object_or_404(Repository, pk=repository_id)
    # A hydration of imported URLs may run beside a sync; only another sync is in the way.
    active = repo.sync_runs.filter(status__in=SyncRun.ACTIVE, kind=SyncRun.Kind.SYNC).first()
    if active is not None:
        messages.info(request, f"A sync of {repo} is already under way.")
        return redirect("sync_run", run_id=active.pk)
    run = start_sync(repo, full=request.POST.get("full") == "1")
    return redirect("sync_run", run_id=run.pk)


@login_required
def sync_run(request, run_id: int):
    _require_ingest_manager(request.user)
    run = get_object_or_404(SyncRun.objects.select_related("repository"), pk=run_id)
    context = {"run": run, "figures": run.figures()}
    template = "ingest/_run_progress.html" if request.htmx else "ingest/sync_run.html"
    return render(request, template, context)
