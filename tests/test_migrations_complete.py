"""Every model change comes with its migration: `makemigrations --check --dry-run` finds nothing
to write (and no two migrations of an app as rival leaves, as after a merge of two branches
that each added one), so a model edit without its migration fails here, not on a host."""

from __future__ import annotations

import io

from django.core.management import call_command

from ingest.models import Repository


def _makemigrations_check() -> tuple[int, str]:
    """makemigrations' exit code (0: nothing to write) and what it said."""
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exit:
        return int(exit.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_the_models_and_the_migrations_agree(db):
    code, said = _makemigrations_check()
    assert code == 0, f"a model changed without its migration (manage.py makemigrations):\n{said}"
    assert "No changes detected" in said


def test_the_check_fails_for_a_model_change_without_a_migration(db, monkeypatch):
    # The probe can fire: a field changed in the model but in no migration.
    field = Repository._meta.get_field("name")
    monkeypatch.setattr(field, "max_length", (field.max_length or 0) + 1)
    code, said = _makemigrations_check()
    assert code == 1
    assert "Alter field name on repository" in said
