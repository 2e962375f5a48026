"""The global taxonomy page: the tree with counts of details and a search over names and details.

It shows public versions (the study's taxonomy, versions an administrator published) and, to
their members, the versions of a user's projects; any other version is a 404 (see
`taxonomy.history`).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render

from taxonomy import history
from taxonomy.search import build_tree, search_nodes


@login_required
def latest(request):
    version = history.global_version()
    if version is None:
        return render(request, "taxonomy/empty.html")
    return redirect("taxonomy_version", version_id=version.pk)


@login_required
def version_detail(request, version_id: int):
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
    template = "taxonomy/_results.html" if request.htmx else "taxonomy/version_detail.html"
    return render(request, template, context)
