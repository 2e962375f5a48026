"""A small API documentation page rendered on the server from the OpenAPI schema.

Swagger UI and Redoc load from CDNs and run inline scripts, which the offline setup and the
Content-Security-Policy forbid; this page lists the same schema as plain HTML instead.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from drf_spectacular.generators import SchemaGenerator

METHODS = ("get", "post", "put", "patch", "delete")


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
                    "summary": op.get("summary") or op.get("description", ""),
                    "parameters": [
                        {
                            "name": p.get("name"),
                            "in": p.get("in"),
                            "description": p.get("description", ""),
                            "required": p.get("required", False),
                        }
                        for p in op.get("parameters", [])
                    ],
                    "responses": sorted(op.get("responses", {})),
                }
            )
    return ops


@login_required
def api_docs(request):
    # No request: drf-spectacular would read DRF-only attributes off a plain Django request.
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return render(
        request,
        "dataset/api_docs.html",
        {"info": schema.get("info", {}), "operations": schema_operations(schema)},
    )
