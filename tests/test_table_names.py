"""Hand-written SQL names its tables through the models (`Model._meta.db_table`), never by hand.

A model that moves between apps keeps its table (`Meta.db_table`, CONVENTIONS), so a name typed
into a statement is a second place to keep in step. This reads every string literal of the
project's packages, found by walking the tree (not the migrations, which are history, nor
`lib/sql.py`, which takes its names from the model it is given), and fails on a piece of SQL
that names a table of any of our apps.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent


def _packages() -> list[str]:
    """Every package of the project (a top-level directory with `__init__.py`: the apps and
    `lib`), found by walking the tree, so a new app is read without being listed here; the
    tests are not code of the apps."""
    return sorted(
        p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"
    )


def _our_apps() -> list:
    """The installed apps whose code lives in this project (not Django's or a library's)."""
    return [c for c in apps.get_app_configs() if Path(c.path).resolve().parent == ROOT]


def _our_tables() -> set[str]:
    return {model._meta.db_table for app in _our_apps() for model in app.get_models()}


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


def test_the_walk_finds_every_app_and_its_tables():
    """Every app of ours is read, and the tables of each are ours: `raters` was once left out
    of a hand-written list, and with it the machine raters' tables that `labeling.submission`
    had typed into its SQL."""
    packages = set(_packages())
    assert {app.name for app in _our_apps()} <= packages
    assert {"lib", "labeling", "raters", "dataset"} <= packages
    tables = _our_tables()
    assert {"raters_machinelabel", "raters_machinerater", "raters_raterrun"} <= tables
    typed_by_hand = (
        '_ENLISTED_MACHINE_SQL = """\n'
        "SELECT EXISTS (\n"
        "  SELECT 1 FROM raters_machinelabel m JOIN raters_machinerater r ON r.id = m.rater_id\n"
        '  WHERE m.issue_id = %(issue)s)\n"""\n'
    )
    assert _strings_naming(tables, typed_by_hand) == [
        (1, "raters_machinelabel"),
        (1, "raters_machinerater"),
    ]


def test_no_hand_written_table_names_in_the_apps():
    tables = _our_tables()
    assert "annotator_annotation" in tables and "ingest_issue" in tables
    offenders = []
    for app in _packages():
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts or path == ROOT / "lib" / "sql.py":
                continue
            for line, table in _strings_naming(tables, path.read_text()):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {table}")
    assert offenders == []
