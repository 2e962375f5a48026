"""What an issue page shows: the issue with its comments rendered safely, and the taxonomy
choices for the label form. Both are cached, since a volunteer opens hundreds of issues and
the same taxonomy on each."""

from __future__ import annotations

import hashlib
import time

from django.core.cache import cache
from django.utils import translation
from django.utils.safestring import mark_safe
from django.utils.translation import get_language

from annotator.models import Project
from ingest.models import Issue
from labeling.rendering import render_markdown
from taxonomy.models import TaxonomyNode
from taxonomy.texts import description_for

# Bump when the sanitizer's rules change, so no HTML rendered under the old rules is served.
RENDER_VERSION = 1
CACHE_SECONDS = 24 * 3600


def _render_many(texts: list[str]) -> list[str]:
    """Render Markdown texts, reusing cached HTML keyed by a hash of each text and the language
    (the sanitizer words its image buttons in the request's language)."""
    language = get_language() or ""
    keys = [
        f"md:{RENDER_VERSION}:{language}:{hashlib.sha256(t.encode()).hexdigest()}" if t else ""
        for t in texts
    ]
    cached = cache.get_many([k for k in keys if k])
    out, missing = [], {}
    for text, key in zip(texts, keys, strict=True):
        if not key:
            out.append("")
        elif key in cached:
            out.append(cached[key])
        else:
            html = render_markdown(text)
            missing[key] = html
            out.append(html)
    if missing:
        cache.set_many(missing, CACHE_SECONDS)
    # Safe: every string came out of the sanitizer.
    return [mark_safe(html) for html in out]  # noqa: S308


def issue_context(issue: Issue) -> dict:
    # The forge payload (`raw`) can be large and is never shown.
    comments = list(issue.comments.defer("raw"))
    rendered = _render_many([issue.body] + [c.body for c in comments])
    return {
        "issue": issue,
        "body_html": rendered[0],
        "comments": list(zip(comments, rendered[1:], strict=True)),
    }


def _cached_nodes(version_id: int, with_details: bool) -> list[dict]:
    """The version's nodes as plain rows, cached briefly per version and shape.

    Short-lived: a version edited in place shows up within minutes.
    """
    # ("payload3": the payload gained descriptions, then their other languages; a cached row
    # of an older shape is not reused.)
    key = f"taxonomy-{'payload3' if with_details else 'nodes'}:{version_id}"
    rows = cache.get(key)
    if rows is None:
        nodes = TaxonomyNode.objects.filter(version_id=version_id).order_by(
            "level", "position", "code"
        )
        if not with_details:
            nodes = nodes.defer("details", "description", "descriptions")
        rows = [
            {
                "id": n.pk,
                "code": n.code,
                "name": n.name,
                "level": n.level,
                "parent": n.parent_id,
                **(
                    {
                        "description": n.description,
                        "descriptions": n.descriptions,
                        "details": n.details,
                    }
                    if with_details
                    else {}
                ),
            }
            for n in nodes
        ]
        cache.set(key, rows, 300)
    return rows


def description_language(project: Project) -> str | None:
    """The language this request's reader sees taxonomy descriptions in: the active one when
    the project chose to show them in the reader's language, else None (as written)."""
    return translation.get_language() if project.translated_descriptions else None


def taxonomy_payload(version_id: int, language: str | None = None) -> list[dict]:
    """The version's nodes with their descriptions and example details, for the sub-theme
    search and the labeling page's taxonomy panel.

    `description` is what a reader of `language` sees (`taxonomy.texts.description_for`); when
    that is not the description as written, the English stays beside it as
    `written_description` (absent when empty, as the study's are).
    """
    out = []
    for row in _cached_nodes(version_id, with_details=True):
        node = {k: v for k, v in row.items() if k != "descriptions"}
        node["description"] = description_for(row, language)
        if row["description"] and node["description"] != row["description"]:
            node["written_description"] = row["description"]
        out.append(node)
    return out


def taxonomy_nodes(version_id: int) -> list[dict]:
    """The version's nodes without their example details: what the label form's lists need.

    Cached on their own: every submission validates against them, and the details are most of
    the payload's weight to fetch and unpickle.
    """
    return _cached_nodes(version_id, with_details=False)


def label_choices(version_id: int, initial: dict | None) -> dict:
    """Options of the type, theme and sub-theme lists, with the current choice marked.

    Built here rather than in the template: a taxonomy has about a hundred nodes, and comparing
    each in template filters was a measurable share of the labeling page's time.
    """
    initial = initial or {}
    chosen = {str(initial.get(f) or "") for f in ("issue_type", "theme", "sub_theme")}
    levels: dict[int, list[dict]] = {1: [], 2: [], 3: []}
    for node in taxonomy_nodes(version_id):
        # Ids as text: the template would otherwise localize each number (a third of the
        # form's rendering time).
        option = {**node, "id": str(node["id"]), "parent": str(node["parent"] or "")}
        option["selected"] = option["id"] in chosen
        levels[node["level"]].append(option)
    for node in levels[1]:
        node["key"] = node["name"][:1].lower()
    return {
        "type_options": levels[1],
        "theme_options": levels[2],
        "sub_options": levels[3],
        # The rendered lists depend on nothing else but the language of their labels: the
        # template caches them under this key (as long as the nodes themselves are cached).
        "options_key": f"{get_language()}:{version_id}:{':'.join(sorted(chosen))}",
    }


# Version id -> (read at, nodes by id): every submission validates against them.
_NODES_BY_ID: dict[int, tuple[float, dict[int, dict]]] = {}
NODES_BY_ID_SECONDS = 10.0


def nodes_by_id(version_id: int) -> dict[int, dict]:
    """The version's nodes (without details) by id, for validating a submitted label.

    Kept in the process for a few seconds on top of the shared cache: a worker takes dozens of
    submissions a second, and each fetched and unpickled the same hundred rows.
    """
    now = time.monotonic()
    found = _NODES_BY_ID.get(version_id)
    if found is None or now - found[0] > NODES_BY_ID_SECONDS:
        found = _NODES_BY_ID[version_id] = (
            now,
            {node["id"]: node for node in taxonomy_nodes(version_id)},
        )
    return found[1]
