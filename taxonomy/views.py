"""The taxonomy tree with counts of details and a search over names and details."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render

from taxonomy.models import TaxonomyVersion
from taxonomy.search import build_tree, search_nodes


@login_required
def latest(request):
    version = TaxonomyVersion.objects.order_by("-created_at").first()
    if version is None:
        return render(request, "taxonomy/empty.html")
    return redirect("taxonomy_version", version_id=version.pk)


@login_required
def version_detail(request, version_id: int):
    # Taxonomies are shared reference data: any signed-in user may read them.
    version = get_object_or_404(TaxonomyVersion.objects.select_related("taxonomy"), pk=version_id)
    query = request.GET.get("q", "").strip()
    context = {
        "version": version,
        "query": query,
        "versions": TaxonomyVersion.objects.select_related("taxonomy"),
    }
    if query:
        context["results"] = search_nodes(version, query)
    else:
        context["tree"] = build_tree(version)
    template = "taxonomy/_results.html" if request.htmx else "taxonomy/version_detail.html"
    return render(request, template, context)
