"""The CSV rule: formula-like text cells are shown as text, numbers and plain text unchanged."""

import csv
import io

import pytest

from lib import csvsafe


@pytest.mark.parametrize(
    "cell",
    ['=HYPERLINK("http://x","y")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1", "\r=1"],
)
def test_formula_like_text_is_quoted(cell):
    assert csvsafe.neutralise(cell) == "'" + cell
    assert csvsafe.is_formula_like(cell)


@pytest.mark.parametrize("cell", ["-0.25", "+3", "-1e-5", "plain", "", "a=b", 0.5, -3, None])
def test_numbers_and_plain_text_are_unchanged(cell):
    assert csvsafe.neutralise(cell) == cell
    assert not csvsafe.is_formula_like(cell)


def test_writer_neutralises_every_row():
    out = io.StringIO()
    w = csvsafe.writer(out)
    w.writerow(["=1+1", "ok", -0.5])
    w.writerows([["@x", "-y"]])
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows == [["'=1+1", "ok", "-0.5"], ["'@x", "'-y"]]
