"""Release pages: the list with each release's figures, freezing a new one (leads and admins),
its build progress (htmx polling), the download, and the diff between two releases."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe

from annotator.permissions import membership_or_404
from dataset.forms import CompareForm, ReleaseForm
from dataset.models import Release
from dataset.permissions import RELEASE_ROLES, can_create_release
from dataset.releases import (
    SEMVER,
    citation_complete,
    citation_defaults,
    diff_releases,
    progress_of,
    release_path,
    start_release,
    version_key,
)
from labeling.rendering import render_markdown
from lib import superseded
from lib.refusal import call_with_form
from lib.requests import AuthedRequest


def _row(release: Release) -> dict:
    """What the list shows of a release: figures at theme level per type, rendered note."""
    progress, step = progress_of(release)
    kappas = [r for r in release.agreement if r.get("level") == "theme"]
    return {
        "release": release,
        "progress": progress,
        "step": step,
        # Safe: the note went through labeling.rendering's Markdown sanitiser.
        "note_html": mark_safe(render_markdown(release.note)),  # noqa: S308
        "kappas": kappas,
        "citation_complete": citation_complete(release),
        "authors": [line for line in release.authors.splitlines() if line.strip()],
    }


@login_required
def releases(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=RELEASE_ROLES)
    project = membership.project
    may_create = can_create_release(membership)
    form = ReleaseForm(initial=citation_defaults(project))
    status = 200
    if request.method == "POST":
        if not may_create:
            raise Http404
        form = ReleaseForm(request.POST)
        release = call_with_form(
            form,
            lambda data: start_release(
                project,
                request.user,
                data["version"],
                data["note"],
                # Blank title or licence: the project's; blank authors: none.
                title=data["title"] or None,
                authors=data["authors"],
                licence=data["licence"] or None,
            ),
        )
        if release is not None:
            # Tasks run in-process (no Redis) build it before this response: show that.
            release.refresh_from_db()
            if request.htmx:
                return render(
                    request,
                    "dataset/_release.html",
                    {"project": project, "row": _row(release), "created": True},
                )
            return redirect("releases", project_id=project.pk)
        status = 400
        if request.htmx:
            # htmx swaps no 4xx response: the refused form replaces the form itself instead of
            # landing in the list (a plain POST gets the whole page with status 400).
            response = render(
                request, "dataset/_release_form.html", {"project": project, "form": form}
            )
            response["HX-Retarget"] = "#release-form"
            response["HX-Reswap"] = "outerHTML"
            return response
    compare = CompareForm(request.GET or None)
    if compare.is_bound and compare.is_valid():
        return redirect(
            "release_compare",
            project_id=project.pk,
            a=compare.cleaned_data["a"],
            b=compare.cleaned_data["b"],
        )
    items = sorted(
        Release.objects.filter(project=project).select_related("taxonomy_version"),
        key=lambda r: (r.status != Release.Status.FAILED, version_key(r)),
        reverse=True,
    )
    # A failed release followed by a released one is marked as older.
    items = superseded.mark(
        items,
        key=lambda r: r.project_id,
        failed=Release.Status.FAILED,
        done=Release.Status.DONE,
    )
    done = [r for r in items if r.status == Release.Status.DONE]
    return render(
        request,
        "dataset/releases.html",
        {
            "project": project,
            "rows": [_row(r) for r in items],
            "done": done,
            "form": form,
            "may_create": may_create,
        },
        status=status,
    )


@login_required
def release_row(request: AuthedRequest, project_id: int, release_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=RELEASE_ROLES)
    release = get_object_or_404(Release, project=membership.project, pk=release_id)
    return render(
        request, "dataset/_release.html", {"project": membership.project, "row": _row(release)}
    )


@login_required
def release_download(request: AuthedRequest, project_id: int, release_id: int) -> FileResponse:
    membership = membership_or_404(request.user, project_id, roles=RELEASE_ROLES)
    release = get_object_or_404(
        Release, project=membership.project, pk=release_id, status=Release.Status.DONE
    )
    path = release_path(release)
    if not path.exists():
        raise Http404
    return FileResponse(open(path, "rb"), as_attachment=True, filename=release.filename)


@login_required
def release_compare(request: AuthedRequest, project_id: int, a: str, b: str) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=RELEASE_ROLES)
    if not (SEMVER.fullmatch(a) and SEMVER.fullmatch(b)):
        raise Http404
    done = Release.objects.filter(project=membership.project, status=Release.Status.DONE)
    old = get_object_or_404(done.select_related("taxonomy_version"), version=a)
    new = get_object_or_404(done.select_related("taxonomy_version"), version=b)
    diff = diff_releases(old, new)
    return render(
        request,
        "dataset/release_compare.html",
        {"project": membership.project, "old": old, "new": new, "diff": diff},
    )
