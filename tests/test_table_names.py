"""Hand-written SQL names its tables through the models (`Model._meta.db_table`), never by hand.

A model that moves between apps keeps its table (`Meta.db_table`, CONVENTIONS), so a name typed
into a statement is a second place to keep in step. This reads every string literal of the
apps (not the migrations, which are history, nor `lib/sql.py`, which takes its names from the
model it is given) and fails on a piece of SQL that names a table of ours.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent
APPS = ("annotator", "config", "lib", "taxonomy", "ingest", "labeling", "agreement", "dataset")
APPS += ("interviews",)


def _our_tables() -> set[str]:
    return {
        model._meta.db_table
        for model in apps.get_models()
        if model.__module__.split(".")[0] in APPS
    }


# A string literal with one of these words is SQL (a `related_name` may equal a table's name).
SQL_WORDS = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|FROM|JOIN|INTO|WHERE|TABLE)\b")


def _strings_naming(tables: set[str], source: str) -> list[tuple[int, str]]:
    """(line, table) for every piece of SQL in a string literal of `source` that names one of
    `tables`."""
    names = re.compile(r"\b(" + "|".join(sorted(tables, key=len, reverse=True)) + r")\b")
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and SQL_WORDS.search(token.string):
            found += [(token.start[0], name) for name in names.findall(token.string)]
    return found


def test_the_probe_finds_a_table_typed_into_a_statement():
    tables = {"annotator_annotation", "ingest_issue"}
    source = (
        'SQL = "SELECT a.id FROM annotator_annotation a"\n'
        "NOT_A_TABLE = 'annotator_id'\n"
        'class Meta:\n    db_table = "ingest_issue"\n'
        'JOIN = (\n    f"SELECT {columns} FROM x"\n'
        '    " JOIN ingest_issue i ON i.id = x.issue_id"\n)\n'
    )
    assert _strings_naming(tables, source) == [(1, "annotator_annotation"), (7, "ingest_issue")]


def test_no_hand_written_table_names_in_the_apps():
    tables = _our_tables()
    assert "annotator_annotation" in tables and "ingest_issue" in tables
    offenders = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts or path == ROOT / "lib" / "sql.py":
                continue
            for line, table in _strings_naming(tables, path.read_text()):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {table}")
    assert offenders == []
