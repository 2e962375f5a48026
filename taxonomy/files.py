"""A whole taxonomy version as one JSON file, so a study can start from another's taxonomy.

Shape::

    {"format": "issue-annotator/taxonomy", "format_version": 1,
     "taxonomy": "…", "version": 3, "note": "…",
     "types": [{"code": "A", "name": "Question", "description": "", "details": [],
                "children": [{"code": "A.1", …, "children": [{"code": "A.1.i", …}]}]}]}

Reading checks everything before storing anything and names the JSON path of the first fault
(`types[0].children[2].code`); storing is one transaction.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.db.models import Model
from django.utils.translation import gettext

from lib import inputlimits
from taxonomy.loader import NodeSpec, store_version
from taxonomy.models import Taxonomy, TaxonomyNode, TaxonomyVersion
from taxonomy.search import TreeNode, build_tree

FORMAT = "issue-annotator/taxonomy"
FORMAT_VERSION = 1
# Codes are what labels, files and URLs name a node by: ASCII only, so that a look-alike (a
# Cyrillic C beside a Latin one, a fullwidth digit) cannot pass for another node.
CODE = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")


class TaxonomyJSONError(ValueError):
    """A taxonomy file that cannot be imported; `path` is where in the JSON the fault is (as the
    file names it), the message in the reader's language (gettext when raised)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


def _node_dict(tree: TreeNode) -> dict[str, Any]:
    node = tree.node
    out: dict[str, Any] = {
        "code": node.code,
        "name": node.name,
        "description": node.description,
        "details": list(node.details),
    }
    if tree.children:
        out["children"] = [_node_dict(c) for c in tree.children]
    return out


def export_version(version: TaxonomyVersion) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "taxonomy": version.taxonomy.name,
        "version": version.number,
        "note": version.note,
        "types": [_node_dict(t) for t in build_tree(version)],
    }


def export_json(version: TaxonomyVersion) -> str:
    return json.dumps(export_version(version), ensure_ascii=False, indent=2) + "\n"


def _string(obj: dict, key: str, path: str, *, required: bool) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str):
        raise TaxonomyJSONError(
            f"{path}.{key}",
            gettext("must be a string, not %(type)s") % {"type": type(value).__name__},
        )
    if required and not value.strip():
        raise TaxonomyJSONError(f"{path}.{key}", gettext("must not be empty"))
    return value.strip()


def _check_length(model: type[Model], field: str, value: str, path: str) -> None:
    problem = inputlimits.length_error(model, field, value)
    if problem:
        raise TaxonomyJSONError(path, problem)


def _parse_node(obj: Any, path: str, level: int, parent_code: str, codes: set[str]) -> NodeSpec:
    if not isinstance(obj, dict):
        raise TaxonomyJSONError(
            path, gettext("must be an object with code, name, description, details")
        )
    unknown = set(obj) - {"code", "name", "description", "details", "children"}
    if unknown:
        raise TaxonomyJSONError(f"{path}.{sorted(unknown)[0]}", gettext("unknown field"))
    code = _string(obj, "code", path, required=True)
    _check_length(TaxonomyNode, "code", code, f"{path}.code")
    if not CODE.fullmatch(code):
        raise TaxonomyJSONError(
            f"{path}.code",
            gettext("%(code)s: ASCII letters and digits, dot-separated") % {"code": repr(code)},
        )
    if parent_code and not code.startswith(parent_code + "."):
        raise TaxonomyJSONError(
            f"{path}.code",
            gettext("%(code)s must start with %(prefix)s")
            % {"code": repr(code), "prefix": repr(parent_code + ".")},
        )
    if code in codes:
        raise TaxonomyJSONError(
            f"{path}.code", gettext("%(code)s appears twice") % {"code": repr(code)}
        )
    codes.add(code)
    name = _string(obj, "name", path, required=True)
    _check_length(TaxonomyNode, "name", name, f"{path}.name")
    details = obj.get("details", [])
    if not isinstance(details, list):
        raise TaxonomyJSONError(f"{path}.details", gettext("must be a list of strings"))
    for i, d in enumerate(details):
        if not isinstance(d, str):
            raise TaxonomyJSONError(f"{path}.details[{i}]", gettext("must be a string"))
    children = obj.get("children", [])
    if not isinstance(children, list):
        raise TaxonomyJSONError(f"{path}.children", gettext("must be a list"))
    if children and level == 3:
        raise TaxonomyJSONError(
            f"{path}.children", gettext("a sub-theme (level 3) has no children")
        )
    spec = NodeSpec(code, name, level, _string(obj, "description", path, required=False), details)
    spec.children = [
        _parse_node(c, f"{path}.children[{i}]", level + 1, code, codes)
        for i, c in enumerate(children)
    ]
    return spec


def _line_column(line: int, column: int) -> str:
    return gettext("line %(line)s, column %(column)s") % {"line": line, "column": column}


def parse_json(text: str | bytes) -> tuple[dict[str, Any], list[NodeSpec]]:
    """Validate a taxonomy file; return its header fields and the tree.

    Size (MAX_UPLOAD_BYTES) and nesting (MAX_JSON_DEPTH) are checked before the file is parsed,
    NUL characters (which the database cannot store) anywhere in it, lengths against the columns.
    """
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    too_large = inputlimits.upload_too_large(size)
    if too_large:
        raise TaxonomyJSONError("", gettext("the file is %(size)s") % {"size": too_large})
    try:
        data = inputlimits.loads(text)
    except inputlimits.JSONTooDeep as exc:
        raise TaxonomyJSONError(_line_column(exc.line, exc.column), exc.message) from None
    except json.JSONDecodeError as exc:
        raise TaxonomyJSONError(_line_column(exc.lineno, exc.colno), exc.msg) from None
    except UnicodeDecodeError:
        raise TaxonomyJSONError("", gettext("the file is not UTF-8")) from None
    nul_at = inputlimits.find_nul(data)
    if nul_at is not None:
        raise TaxonomyJSONError(
            nul_at, gettext("contains a NUL character (\\x00), which cannot be stored")
        )
    if not isinstance(data, dict):
        raise TaxonomyJSONError("", gettext("the file must hold a JSON object"))
    if data.get("format") != FORMAT:
        raise TaxonomyJSONError("format", gettext("must be %(value)s") % {"value": repr(FORMAT)})
    if data.get("format_version") != FORMAT_VERSION:
        raise TaxonomyJSONError(
            "format_version", gettext("must be %(value)s") % {"value": FORMAT_VERSION}
        )
    types = data.get("types")
    if not isinstance(types, list) or not types:
        raise TaxonomyJSONError("types", gettext("must be a non-empty list of issue types"))
    codes: set[str] = set()
    specs = [_parse_node(t, f"types[{i}]", 1, "", codes) for i, t in enumerate(types)]
    name, note = data.get("taxonomy"), data.get("note", "")
    if not isinstance(name, str) or not name.strip():
        raise TaxonomyJSONError(
            "taxonomy", gettext("must be a non-empty string (the taxonomy's name)")
        )
    _check_length(Taxonomy, "name", name.strip(), "taxonomy")
    if not isinstance(note, str):
        raise TaxonomyJSONError("note", gettext("must be a string"))
    header = {"taxonomy": name.strip(), "note": note}
    return header, specs


def import_json(
    text: str | bytes,
    *,
    taxonomy_name: str | None = None,
    source: str = "",
    user=None,
    project=None,
) -> TaxonomyVersion:
    """Store a taxonomy file as the next version of the named taxonomy (one transaction).

    The new version has no parent: it shares no lineage, so it is matched to other versions by
    code. Imported into a project, it is part of that project's history only; imported by an
    administrator's command, of none until an administrator publishes it.
    """
    header, specs = parse_json(text)
    return store_version(
        specs,
        taxonomy_name or header["taxonomy"],
        source=source or "imported JSON",
        note=header["note"] or "Imported from a taxonomy file.",
        origin=TaxonomyVersion.Origin.IMPORTED,
        project=project,
        created_by=user,
    )
