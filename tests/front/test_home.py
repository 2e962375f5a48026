"""The home page's list of projects: a column a role may not read is left out, not shown as a
a dash under its heading (blindness: how many issues are final or disputed is for leads)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.urls import reverse

from annotator.models import Membership, Project, Role
from tests.builders import final_issue

DASH = "\u2013"  # what the page shows where a lead's figure is not for this role

pytestmark = pytest.mark.django_db


class _Table(HTMLParser):
    """The text of each header and cell of `table#project-list`, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._inside = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("id", "project-list") in attrs:
            self._inside = True
        elif self._inside and tag == "tr":
            self.rows.append([])
        elif self._inside and tag in ("th", "td"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self._inside = False
        elif self._inside and tag in ("th", "td") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _table(client) -> list[dict[str, str]]:
    parser = _Table()
    parser.feed(client.get(reverse("home")).content.decode())
    header, *rows = parser.rows
    assert all(len(row) == len(header) for row in rows), parser.rows
    return [dict(zip(header, row, strict=True)) for row in rows]


def test_an_annotator_sees_no_final_or_disagreement_column(
    client, project, items, annotator, other_annotator, lead
):
    final_issue(project, items[0], "C.1", "C.1")
    client.force_login(annotator)
    (row,) = _table(client)
    assert set(row) == {"Project", "Your role", "Issues", "Fully labeled", "Progress"}
    assert row["Fully labeled"] == "1" and DASH not in row.values()


def test_a_lead_sees_every_column_and_a_dash_only_where_another_role_of_hers_may_not_read(
    client, project, items, annotator, other_annotator, lead
):
    final_issue(project, items[0], "C.1", "C.1")
    # Lena also labels in a second project, as an annotator.
    other = Project.objects.create(name="Second", taxonomy_version=project.taxonomy_version)
    Membership.objects.create(project=other, user=lead, role=Role.ANNOTATOR)
    client.force_login(lead)
    rows = {row["Project"]: row for row in _table(client)}
    assert set(rows[project.name]) == {
        "Project", "Your role", "Issues", "Final", "Fully labeled", "Disagreements", "Progress"
    }  # fmt: skip
    assert rows[project.name]["Final"] == "1" and rows[project.name]["Disagreements"] == "0"
    assert rows["Second"]["Final"] == DASH and rows["Second"]["Disagreements"] == DASH


def test_a_non_leads_rows_do_not_carry_the_counts_even_unrendered(
    client, project, items, annotator, other_annotator
):
    final_issue(project, items[0], "C.1", "C.1")
    client.force_login(annotator)
    response = client.get(reverse("home"))
    (row,) = response.context["rows"]
    assert "final" not in row and "disagreements" not in row and not response.context["leads_any"]
