"""The difference between two versions, as the versions page shows it."""

import pytest

from taxonomy import edits
from taxonomy.diff import diff_versions
from taxonomy.files import export_json, import_json

pytestmark = pytest.mark.django_db


def kinds(diff) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for change in diff.changes:
        out.setdefault(change.kind, []).append(change.text)
    return out


def test_diff_after_merge_rename_and_add(project, lead):
    v1 = project.taxonomy_version
    v2, _ = edits.merge(project, lead, v1.nodes.get(code="A.3"), v1.nodes.get(code="A.2"))
    v3, _ = edits.rename(project, lead, v2.nodes.get(code="B.4"), "Community Support")
    v4, added = edits.add(project, lead, v3.nodes.get(code="A.2"), "Parameter Interactions")

    one_step = kinds(diff_versions(v1, v2))
    assert one_step["merged"] == [
        "A.3 Unexpected Behavior and Weird Design was merged into A.2 Usage Gaps in LLM Operations"
    ]
    # A.3's three sub-themes now sit under A.2 as A.2.iii to A.2.v.
    assert len(one_step["moved"]) == 3
    assert any(
        t.endswith("is now A.2.iii Framework Implementation and Design Issues")
        for t in one_step["moved"]
    )
    assert set(one_step) == {"merged", "moved"}

    three_steps = kinds(diff_versions(v1, v4))
    assert three_steps["renamed"] == [
        "B.4 “Community and Document Support” was renamed “Community Support”"
    ]
    assert three_steps["added"] == [f"{added.code} Parameter Interactions was added"]
    assert added.code == "A.2.vi"
    assert len(three_steps["merged"]) == 1

    assert diff_versions(v4, v4).is_empty


def test_diff_of_unrelated_versions_matches_codes(project, lead, taxonomy_version):
    copy = import_json(export_json(taxonomy_version), taxonomy_name="Another study")
    assert diff_versions(taxonomy_version, copy).is_empty
    copy.nodes.filter(code="C.10").update(name="Docs")
    assert [c.text for c in diff_versions(taxonomy_version, copy).changes] == [
        "C.10 “Documentation and Maintainability” was renamed “Docs”"
    ]
