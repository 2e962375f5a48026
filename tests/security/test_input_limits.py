"""The inputs of the security issue that gave a 500, one scenario each: now a 400 or a named error.

NUL bytes in form fields, JSON bodies, the address and cookies; a taxonomy JSON with a long
name, a NUL, deep nesting or 30 MB; a codebook with values longer than their column, a NUL or a
cell over 128 KiB; setup with K = 99999 or seed = 10^30. Nothing is half-imported, and the
management commands say what is wrong in one line.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotator.models import Project
from dataset.models import ExportJob
from interviews.codebook import COLUMNS, CodebookError, import_csv
from interviews.models import CodebookEntry, Participant
from lib import inputlimits
from taxonomy.files import TaxonomyJSONError, import_json
from taxonomy.models import Taxonomy, TaxonomyVersion

pytestmark = pytest.mark.django_db


@pytest.fixture
def lena(client, lead, project):
    client.force_login(lead)
    return client


def _taxonomy(**changes) -> dict:
    data = {
        "format": "issue-annotator/taxonomy",
        "format_version": 1,
        "taxonomy": "Tiny",
        "types": [{"code": "A", "name": "Question", "children": [{"code": "A.1", "name": "x"}]}],
    }
    data.update(changes)
    return data


# --- the API and the middleware ----------------------------------------------------------------


def test_a_nul_inside_a_json_string_is_a_400_naming_its_place(lena, project):
    response = lena.post(
        f"/api/projects/{project.pk}/exports/",
        '{"real_names": "yes\\u0000"}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["field"] == "real_names"
    assert "NUL" in response.json()["detail"]
    assert not ExportJob.objects.exists()


def test_json_nested_past_max_json_depth_is_a_400_not_a_recursion_error(lena, project, settings):
    response = lena.post(
        f"/api/projects/{project.pk}/exports/",
        '{"real_names": ' + "[" * 100_000 + "]" * 100_000 + "}",
        content_type="application/json",
    )
    assert response.status_code == 400
    assert f"nested deeper than {settings.MAX_JSON_DEPTH} levels" in response.json()["detail"]
    assert not ExportJob.objects.exists()


def test_a_nul_in_the_address_or_a_cookie_is_a_400(lena, project):
    response = lena.get(f"/projects/{project.pk}/taxonomy/details/%00.csv")
    assert response.status_code == 400
    assert "address" in response.content.decode()

    lena.cookies["sessionid"] = "abcdefgh\x00"
    assert lena.get(f"/projects/{project.pk}/").status_code == 400


def test_a_30_mb_taxonomy_upload_is_refused_unread(lena, project, settings):
    assert settings.MAX_UPLOAD_BYTES == 10 * 1024 * 1024  # the default
    versions = TaxonomyVersion.objects.count()
    big = json.dumps(_taxonomy(note="x" * 30_000_000)).encode()
    response = lena.post(
        f"/projects/{project.pk}/taxonomy/import/",
        {"file": _upload("huge.json", big)},
    )
    assert response.status_code == 413
    assert "MAX_UPLOAD_BYTES" in response.content.decode()
    assert TaxonomyVersion.objects.count() == versions


def _upload(name: str, content: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content)


# --- taxonomy JSON -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (json.dumps(_taxonomy(taxonomy="T" * 201)), "taxonomy: at most 200 characters"),
        (
            json.dumps(_taxonomy(types=[{"code": "A", "name": "Ques\x00tion", "children": []}])),
            "types[0].name: contains a NUL character",
        ),
        (
            json.dumps(_taxonomy(note="DEEP")).replace('"DEEP"', "[" * 5000 + "]" * 5000),
            "nested deeper than 32 levels (MAX_JSON_DEPTH)",
        ),
        (
            json.dumps(_taxonomy(types=[{"code": "\u0410", "name": "Cyrillic A"}])),
            "types[0].code: '\u0410': ASCII letters and digits",
        ),
    ],
)
def test_a_bad_taxonomy_file_names_the_fault_and_stores_nothing(taxonomy_version, text, message):
    versions = TaxonomyVersion.objects.count()
    with pytest.raises(TaxonomyJSONError) as error:
        import_json(text)
    assert message in str(error.value)
    assert TaxonomyVersion.objects.count() == versions
    assert not Taxonomy.objects.filter(name__startswith="TTT").exists()


def test_import_taxonomy_says_what_is_wrong_in_one_line(no_taxonomy, tmp_path, settings):
    settings.MAX_UPLOAD_BYTES = 1000
    path = tmp_path / "large.json"
    path.write_text(json.dumps(_taxonomy(note="x" * 2000)))
    with pytest.raises(CommandError) as error:
        call_command("import_taxonomy", str(path))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: the file is ") and "MAX_UPLOAD_BYTES" in message

    with pytest.raises(CommandError, match="--name: at most 200 characters"):
        call_command("import_taxonomy", str(path), name="n" * 201)
    assert not TaxonomyVersion.objects.exists()


# --- the codebook --------------------------------------------------------------------------------

ROW = ["U1", "User", "Beginner", "PyTorch", "Setup", "Install fails", "A.1", "Docs lag"]


def _codebook(**cells) -> str:
    row = list(ROW)
    for column, value in cells.items():
        row[COLUMNS.index(column.replace("_", " "))] = value
    import csv
    import io

    out = io.StringIO()
    csv.writer(out).writerows([COLUMNS, ROW, row])
    return out.getvalue()


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ({"Participant": "P" * 51}, "line 3, 'Participant': at most 50 characters"),
        ({"Framework_Context": "F" * 301}, "line 3, 'Framework Context': at most 300 characters"),
        ({"Thematic_Quote": "a\x00b"}, "line 3, 'Thematic Quote': contains a NUL character"),
        ({"Research_Insight": "i" * 140_000}, "line 3: not readable as CSV: a cell is over"),
    ],
)
def test_a_bad_codebook_cell_is_named_by_line_and_column_and_nothing_is_imported(
    project, cells, message
):
    with pytest.raises(CodebookError) as error:
        import_csv(project, _codebook(**cells))
    assert message in str(error.value)
    assert not CodebookEntry.objects.exists() and not Participant.objects.exists()


def test_import_codebook_says_what_is_wrong_in_one_line(project, tmp_path):
    path = tmp_path / "codebook.csv"
    path.write_text(_codebook(Prompt_Category="p" * 301))
    with pytest.raises(CommandError) as error:
        call_command("import_codebook", str(project.pk), str(path))
    assert str(error.value) == (
        f"{path}, line 3, 'Prompt Category': at most 300 characters (this one has 301)"
    )
    assert not CodebookEntry.objects.exists()


def test_the_interviews_page_shows_a_codebook_error_instead_of_a_500(lena, project):
    content = _codebook(Participant="P" * 51).encode()
    response = lena.post(
        f"/projects/{project.pk}/interviews/",
        {"action": "import", "file": _upload("codebook.csv", content)},
        follow=True,
    )
    assert response.status_code == 200
    assert "line 3, &#x27;Participant&#x27;: at most 50 characters" in response.content.decode()
    assert not CodebookEntry.objects.exists()


# --- project setup -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"annotations_per_issue": "99999", "resolution_policy": "majority"},
            "annotations_per_issue: between 1 and 50",
        ),
        ({"action": "scope", "seed": str(10**30)}, "seed: a whole number from 0 to 2147483647"),
        ({"action": "scope", "pilot_size": "-1"}, "pilot_size: a whole number from 0 to"),
    ],
)
def test_setup_refuses_numbers_out_of_range_and_changes_nothing(lena, project, data, message):
    before = Project.objects.values().get(pk=project.pk)
    response = lena.post(
        f"/projects/{project.pk}/setup/", {"majority_threshold": "0.6", **data}, follow=True
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert Project.objects.values().get(pk=project.pk) == before


# --- the helpers, without a database -------------------------------------------------------------


def test_json_depth_counts_brackets_outside_strings_only():
    inputlimits.check_json_depth('{"a": "[[[[[[[[[[", "b": [[1]]}', limit=3)
    with pytest.raises(inputlimits.JSONTooDeep) as error:
        inputlimits.check_json_depth('{"a":\n [[[1]]]}', limit=3)
    assert (error.value.line, error.value.column) == (2, 4)


def test_find_nul_gives_the_json_path():
    assert inputlimits.find_nul({"types": [{"name": "ok"}, {"details": ["x", "a\x00"]}]}) == (
        "types[1].details[1]"
    )
    assert inputlimits.find_nul({"ok": ["fine", 1, None]}) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("42", 42), ("²", None), ("\u0663", None), (str(2**63), None), ("0", None), ("", None)],
)
def test_row_id_reads_ascii_digits_within_bigint(raw, expected):
    assert inputlimits.row_id(raw) == expected


def test_a_nul_in_a_proposal_name_is_a_400_naming_the_field(lead, project):
    client = Client(raise_request_exception=False)
    client.force_login(lead)
    response = client.post(
        f"/projects/{project.pk}/taxonomy/proposals/",
        {"name": "Licen\x00sing", "parent": "A"},
    )
    assert response.status_code == 400
    assert "form field 'name'" in response.content.decode()
