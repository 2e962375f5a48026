"""A small API documentation page rendered on the server from the OpenAPI schema.

Swagger UI and Redoc load from CDNs and run inline scripts, which the offline setup and the
Content-Security-Policy forbid; this page lists the same schema as plain HTML instead.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.safestring import SafeString, mark_safe
from drf_spectacular.generators import SchemaGenerator

from labeling.rendering import render_markdown
from lib.requests import AuthedRequest

METHODS = ("get", "post", "put", "patch", "delete")


def _markdown(text: str) -> SafeString:
    """A schema text (Markdown, from our docstrings and drf-spectacular) as sanitised HTML."""
    return mark_safe(render_markdown(text))  # noqa: S308 - sanitised by labeling.rendering


def schema_operations(schema: dict) -> list[dict]:
    """Flatten the schema's paths into one entry per operation, in path order."""
    ops = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if not op:
                continue
            ops.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": _markdown(op.get("summary") or op.get("description", "")),
                    "parameters": [
                        {
                            "name": p.get("name"),
                            "in": p.get("in"),
                            # drf-spectacular writes an enum's values as a Markdown list.
                            "description": _markdown(p.get("description", "")),
                            "required": p.get("required", False),
                        }
                        for p in op.get("parameters", [])
                    ],
                    "responses": sorted(op.get("responses", {})),
                }
            )
    return ops


@login_required
def api_docs(request: AuthedRequest) -> HttpResponse:
    # No request: drf-spectacular would read DRF-only attributes off a plain Django request.
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return render(
        request,
        "dataset/api_docs.html",
        {
            "info": schema.get("info", {}),
            "description": _markdown(schema.get("info", {}).get("description", "")),
            "operations": schema_operations(schema),
        },
    )
