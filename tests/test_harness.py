"""The suite stays fast as it grows (issue 22): what made it take 17 minutes cannot come back.

- Passwords hash with MD5 in tests (PBKDF2's 1,000,000 iterations cost ~0.3 s per persona),
  while the production settings keep the strong hasher.
- The study taxonomy is loaded once per session (`tests/harness.py`), and is still there
  after a transactional test emptied the tables; no test module loads it again (~2 s each)
  unless it needs a second version, and then it is listed here with its reason.
- A transactional test's flush empties only the tables it wrote (`harness.flush_sql`) and
  misses none; rows a module shares (`module_db`) sit in a transaction no committing test may
  interrupt.
- A new test client's middleware does not read every static file again: WhiteNoise's scan is
  made once per session (`harness.share_static_files`), and files are still served.
- A test that starts a process is in the slow tier (`tests/conftest.py` refuses a subprocess
  to a test not marked `slow` or `browser`), so `bin/test --fast` never waits on one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import global_settings, settings
from django.contrib.auth.hashers import get_hasher
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection

from annotator.models import Project
from taxonomy.models import TaxonomyVersion
from tests import conftest, harness

TESTS = Path(__file__).resolve().parent

# Loading the study's CSVs again is 2 s; these tests need a second, separate version of it.
LOADS_A_SECOND_VERSION = {
    "tests/harness.py": "the one load per session",
    "tests/labeling/test_labeling.py": "a label from another project's taxonomy version",
    "tests/front/test_taxonomy_history.py": "only_if_missing finds the study version after an edit",
    "tests/dataset/test_import_labels.py": "published labels imported into a newer version",
}
# Tests about passwords themselves may choose a real hasher.
CHOOSES_A_HASHER = {
    "tests/settings.py": "the fast hasher of every test",
    "tests/annotator/test_accounts_security.py": "password upgrades and token rotation",
}
# Final labels come from tests/builders.py (`final_issue`): through the real submission and
# resolution. These still write rows by hand; no new file may.
WRITES_FINALS_BY_HAND = {
    "tests/agreement/audit_helpers.py": "thousands of synthetic issues for Dawid-Skene",
    "tests/dataset/test_recall.py": "bulk rows for the recall estimate",
    "tests/labeling/test_dashboard.py": "labels and finals at given times (not converted yet)",
    "tests/annotator/test_table_one.py": "not converted yet",
    "tests/annotator/test_table_one_years.py": "not converted yet",
    "tests/dataset/test_api.py": "not converted yet",
    "tests/dataset/test_releases.py": "not converted yet",
    # Written beside the guard, in the same session (issue #22): each builds many finals or a
    # state the submission cannot reach; converting them is the next step.
    "tests/agreement/test_simulation_machine.py": "given panels replayed by the simulator",
    "tests/agreement/test_table_one_counting.py": "a lead decision replacing an imported final",
    "tests/agreement/test_table_one_fp_rate.py": "10,000 imported finals, in bulk",
    "tests/dataset/test_filters.py": "two projects' rows tripled to count queries",
    "tests/labeling/test_final_agreement.py": "type-only labels the picker does not submit",
    "tests/raters/conftest.py": "synthetic corpora of hundreds of finals for the classifier",
    "tests/raters/synthetic.py": "1,200 synthetic texted finals for the calibration (#28)",
    "tests/raters/test_classifier.py": "a unique-token final the in-sample model memorizes",
    "tests/raters/test_retrain.py": "finals without a code, which no submission makes",
}
# Fast-tier tests that commit (django_db(transaction=True)): each file says why. Anything else
# rolls back (a flush after a committing test costs a tenth of a second or more, the commits
# themselves more): no new file may.
COMMITS_IN_THE_FAST_TIER = {
    "tests/test_harness.py": "the harness's own flush and restore",
    "tests/labeling/test_queue_wait.py": "row locks held by another connection's transaction",
    "tests/labeling/test_pg_functions.py": "a function dropped under running code",
    "tests/labeling/test_adaptive.py": "annotators at once over HTTP, in threads",
    "tests/labeling/test_dashboard_snapshot.py": "leads reading a stale page at once, in threads",
    "tests/ingest/test_pages.py": "a sync run in a thread of the web process",
    "tests/ingest/test_parts.py": "two tasks of one part, in threads",
    "tests/lib/test_jobs.py": "two deliveries claiming one job at once, a heartbeat, in threads",
    "tests/faults/test_job_taken_over.py": "another worker takes the job over, in a thread",
}
LOAD = re.compile(r"\bload_study_taxonomy\(")
FINAL_BY_HAND = re.compile(r"\bResolution(\.objects\.create)?\(")
HASHERS = re.compile(r"\bPASSWORD_HASHERS\b")


def offenders(pattern: re.Pattern[str], allowed: dict[str, str]) -> list[str]:
    """Test files (relative to the checkout) whose text matches, beyond the allowed ones."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        name = path.relative_to(TESTS.parent).as_posix()
        if path != Path(__file__) and name not in allowed and pattern.search(path.read_text()):
            found.append(name)
    return found


def test_tests_hash_passwords_fast_and_production_keeps_the_strong_hasher():
    assert get_hasher().algorithm == "md5"
    import config.settings as production

    hashers = getattr(production, "PASSWORD_HASHERS", global_settings.PASSWORD_HASHERS)
    assert hashers[0] == "django.contrib.auth.hashers.PBKDF2PasswordHasher"
    # The strong hashers still verify here: a user a subprocess made with the site's settings.
    assert settings.PASSWORD_HASHERS[1:] == list(global_settings.PASSWORD_HASHERS)


@pytest.mark.django_db
def test_a_persona_costs_a_fast_hash(lead):
    assert lead.password.startswith("md5$")
    assert lead.check_password(conftest.PASSWORD)


@pytest.mark.django_db
def test_the_study_taxonomy_is_the_one_loaded_for_the_session(taxonomy_version, request):
    assert taxonomy_version.pk == request.config.stash[conftest.STUDY_TAXONOMY_ID]
    # Loaded once: no test before this one left another version behind.
    assert list(TaxonomyVersion.objects.values_list("pk", flat=True)) == [taxonomy_version.pk]
    assert taxonomy_version.nodes.count() == 3 + 18 + 70


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_sees_it_too(taxonomy_version):
    assert taxonomy_version.nodes.count() == 3 + 18 + 70


@pytest.mark.django_db
def test_and_it_is_back_after_a_transactional_test_emptied_the_tables(taxonomy_version):
    # The test above ran first (pytest keeps a module's order) and its flush emptied them.
    assert taxonomy_version.nodes.count() == 3 + 18 + 70


@pytest.mark.django_db(transaction=True)
def test_the_flush_deletes_every_row_a_test_wrote_and_keeps_the_content_types(issues_in_project):
    statements = harness.flush_sql(no_style(), connection, reset_sequences=False)
    assert f"DELETE FROM {connection.ops.quote_name(Project._meta.db_table)}" in statements
    assert not any("TRUNCATE" in statement for statement in statements)

    call_command("flush", verbosity=0, interactive=False, reset_sequences=False)  # the teardown's
    left = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.django_table_names(only_existing=True):
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            (rows,) = cursor.fetchone()
            if rows:
                left[table] = rows
    assert set(left) == set(harness.KEPT_BY_FLUSH), left
    # The harness puts the taxonomy back after the test, as after Django's flush.


@pytest.mark.django_db
def test_restore_puts_back_an_emptied_taxonomy_with_the_same_ids(taxonomy_version):
    nodes = set(taxonomy_version.nodes.values_list("pk", "code"))
    assert harness.restore(taxonomy_version.pk) is False  # still there: nothing to do
    TaxonomyVersion.objects.all().delete()
    assert harness.restore(taxonomy_version.pk) is True
    assert set(taxonomy_version.nodes.values_list("pk", "code")) == nodes


def test_no_new_fast_test_commits(request):
    committing = {
        item.path.relative_to(TESTS.parent).as_posix()
        for item in request.session.items
        if conftest.transactional(item)
        and not item.get_closest_marker("slow")
        and not item.get_closest_marker("browser")
    }
    assert committing <= set(COMMITS_IN_THE_FAST_TIER), (
        "a test that needs no other process or thread rolls back: @pytest.mark.django_db"
    )


def test_the_commit_probe_knows_a_committing_test(request):
    assert conftest.transactional(_Probe(request.config, transaction=True))
    assert not conftest.transactional(_Probe(request.config, transaction=False))


def test_a_transactional_test_may_not_run_inside_a_modules_shared_rows(request):
    # module_db keeps a transaction open: a test that commits and flushes would end it.
    request.config.stash[conftest.SHARED_ROWS_OF] = "tests/test_x.py"
    try:
        with pytest.raises(conftest.SharedRowsOpen, match="before the module's first test"):
            conftest.pytest_runtest_setup(_Probe(request.config, transaction=True))
        conftest.pytest_runtest_setup(_Probe(request.config, transaction=False))  # may run
    finally:
        del request.config.stash[conftest.SHARED_ROWS_OF]


class _Probe:
    """A stand-in test item with a `django_db` marker."""

    nodeid = "tests/test_x.py::test_commits"
    fixturenames = ("db",)

    def __init__(self, config, transaction: bool) -> None:
        self.config = config
        self.marker = pytest.mark.django_db(transaction=transaction).mark

    def get_closest_marker(self, name: str):
        return self.marker if name == "django_db" else None


def test_no_test_module_loads_the_study_taxonomy_again():
    assert offenders(LOAD, LOADS_A_SECOND_VERSION) == [], (
        "use the `taxonomy_version` or `project` fixture: the study taxonomy is loaded once "
        "per session (tests/harness.py)"
    )


def test_no_test_module_chooses_its_own_password_hasher():
    assert offenders(HASHERS, CHOOSES_A_HASHER) == [], (
        "tests/settings.py sets the fast hasher for every test"
    )


def test_no_new_test_module_writes_final_labels_by_hand():
    assert offenders(FINAL_BY_HAND, WRITES_FINALS_BY_HAND) == [], (
        "use tests.builders.final_issue: final labels through the real submission"
    )


def test_the_scans_notice_an_offender(tmp_path, monkeypatch):
    # The probe can fire: a module that loads the taxonomy in a fixture is found.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_new.py").write_text(
        "@pytest.fixture\ndef version(db):\n    return load_study_taxonomy()\n"
        "def test_x(settings):\n    settings.PASSWORD_HASHERS = []\n"
        "    Resolution.objects.create(project=project)\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "TESTS", tmp_path / "tests")
    assert offenders(LOAD, LOADS_A_SECOND_VERSION) == ["tests/test_new.py"]
    assert offenders(HASHERS, CHOOSES_A_HASHER) == ["tests/test_new.py"]
    assert offenders(FINAL_BY_HAND, WRITES_FINALS_BY_HAND) == ["tests/test_new.py"]


def test_a_fast_test_may_not_start_a_process():
    with pytest.raises(conftest.SlowTierOnly, match="mark it slow"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.slow
def test_a_slow_test_may():
    assert subprocess.run([sys.executable, "-c", "pass"], check=True).returncode == 0


def test_the_labeling_tests_run_twice_only_where_the_path_matters(request):
    twice = {
        item.path.relative_to(TESTS.parent).as_posix()
        for item in request.session.items
        if "[pg-functions" in item.nodeid or "[python-only" in item.nodeid
    }
    marked = {
        item.path.relative_to(TESTS.parent).as_posix()
        for item in request.session.items
        if item.get_closest_marker("both_paths") or "functions" in item.fixturenames
    }
    assert twice <= marked


def test_a_new_clients_middleware_reuses_the_first_scan_of_the_static_files(monkeypatch):
    from django.test import Client
    from whitenoise import base
    from whitenoise.middleware import WhiteNoiseMiddleware

    first = WhiteNoiseMiddleware(lambda request: None)
    made: list[str] = []
    real = base.WhiteNoise.get_static_file

    def counted(self, path, url, **kwargs):
        made.append(url)
        return real(self, path, url, **kwargs)

    monkeypatch.setattr(base.WhiteNoise, "get_static_file", counted)
    second = WhiteNoiseMiddleware(lambda request: None)
    assert made == []  # no file read again
    assert second.files == first.files and "/static/css/app.css" in second.files
    # The client's request is served from the shared scan, as from a fresh one.
    response = Client().get("/static/css/app.css")
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert body == (Path(settings.BASE_DIR) / "static" / "css" / "app.css").read_bytes()
    assert made == []


def test_a_changed_static_setting_scans_again(settings):
    from django.test import Client
    from whitenoise.middleware import WhiteNoiseMiddleware

    before = WhiteNoiseMiddleware(lambda request: None).files["/static/css/app.css"]
    settings.WHITENOISE_MAX_AGE = 7
    after = WhiteNoiseMiddleware(lambda request: None).files["/static/css/app.css"]
    assert after is not before
    response = Client().get("/static/css/app.css")
    assert response.status_code == 200 and "max-age=7" in response["Cache-Control"]
