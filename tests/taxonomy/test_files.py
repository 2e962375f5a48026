"""A whole taxonomy version as JSON: export, import, and clear errors on bad files."""

import json

import pytest
from django.core.management import CommandError, call_command

from taxonomy.files import TaxonomyJSONError, export_json, export_version, import_json
from taxonomy.models import Taxonomy, TaxonomyVersion

pytestmark = pytest.mark.django_db


def test_export_then_import_gives_the_same_tree(taxonomy_version):
    data = export_version(taxonomy_version)
    assert [t["code"] for t in data["types"]] == ["A", "B", "C"]
    sub = data["types"][2]["children"][2]["children"][0]
    assert sub["code"] == "C.3.i" and sub["details"]

    copy = import_json(export_json(taxonomy_version), taxonomy_name="Another study")
    assert copy.taxonomy.name == "Another study" and copy.parent is None
    fields = ("code", "name", "level", "description", "details", "parent__code", "position")
    assert list(copy.nodes.order_by("code").values(*fields)) == list(
        taxonomy_version.nodes.order_by("code").values(*fields)
    )
    # Importing under the file's own name adds a version to that taxonomy.
    again = import_json(export_json(taxonomy_version))
    assert (again.taxonomy, again.number) == (taxonomy_version.taxonomy, 2)


def _file(**changes):
    data = {
        "format": "issue-annotator/taxonomy",
        "format_version": 1,
        "taxonomy": "Tiny",
        "types": [
            {
                "code": "A",
                "name": "Question",
                "children": [{"code": "A.1", "name": "Install", "details": ["CUDA"]}],
            }
        ],
    }
    data.update(changes)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "line 1, column 2"),
        (_file(format="csv"), "format: must be 'issue-annotator/taxonomy'"),
        (_file(types=[]), "types: must be a non-empty list"),
        (
            _file(types=[{"code": "A", "name": "Q", "children": [{"code": "B.1", "name": "x"}]}]),
            "types[0].children[0].code: 'B.1' must start with 'A.'",
        ),
        (
            _file(types=[{"code": "A", "name": "", "children": []}]),
            "types[0].name: must not be empty",
        ),
        (
            _file(types=[{"code": "A", "name": "Q", "details": ["ok", 3]}]),
            "types[0].details[1]: must be a string",
        ),
        (
            _file(types=[{"code": "A", "name": "Q"}, {"code": "A", "name": "R"}]),
            "types[1].code: 'A' appears twice",
        ),
        (
            _file(
                types=[
                    {
                        "code": "A",
                        "name": "Q",
                        "children": [
                            {
                                "code": "A.1",
                                "name": "t",
                                "children": [
                                    {
                                        "code": "A.1.i",
                                        "name": "s",
                                        "children": [{"code": "A.1.i.a", "name": "x"}],
                                    }
                                ],
                            }
                        ],
                    }
                ]
            ),
            "types[0].children[0].children[0].children: a sub-theme (level 3) has no children",
        ),
    ],
)
def test_bad_files_name_the_fault_and_store_nothing(no_taxonomy, text, message):
    with pytest.raises(TaxonomyJSONError) as err:
        import_json(text)
    assert message in str(err.value)
    assert not Taxonomy.objects.filter(name="Tiny").exists()
    assert not TaxonomyVersion.objects.exists()


def test_a_small_file_imports(db):
    version = import_json(_file())
    assert list(version.nodes.values_list("code", "level", "details")) == [
        ("A", 1, []),
        ("A.1", 2, ["CUDA"]),
    ]


def test_commands_export_and_import(taxonomy_version, tmp_path):
    path = tmp_path / "t.json"
    call_command("export_taxonomy", taxonomy_version.pk, output=str(path))
    call_command("import_taxonomy", str(path), name="Copied")
    assert Taxonomy.objects.get(name="Copied").versions.get().nodes.count() == (
        taxonomy_version.nodes.count()
    )
    path.write_text('{"format": "issue-annotator/taxonomy", "format_version": 2}')
    with pytest.raises(CommandError, match=r"t\.json: format_version: must be 1"):
        call_command("import_taxonomy", str(path))
