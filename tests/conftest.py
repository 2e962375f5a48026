"""Shared fixtures: the study's taxonomy, personas of a labeling project, and a browser.

The harness keeps these cheap (docs/CONVENTIONS.md, "Fast tests"; `tests/test_harness.py`
checks it): passwords hash with MD5 (`tests/settings.py`), and the study taxonomy is loaded
once per session into the test database (`tests/harness.py`), so `taxonomy_version` and
`project` cost a query, not 2 s.

Personas, as in the tests of healthchecks: `lead` runs the study, `annotator` and
`other_annotator` label, `researcher` reads final data, `outsider` belongs to no project and
must get 404 everywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import translation

# The site's Celery app, current in the test process as in a worker: tests run tasks in place
# (`task.apply()`) and send Celery's signals, whose receivers config.celery connects. Other
# processes import it only when they first queue a task (config/__init__); tests/test_startup.py
# checks that in fresh interpreters.
import config.celery  # noqa: F401
from annotator.models import Membership, Project, Role
from ingest.models import Issue, Repository
from labeling.models import ProjectIssue
from taxonomy.models import Taxonomy, TaxonomyVersion

from . import harness
from .harness import transactional

# Long tests first under pytest-xdist (issue 22: the whole suite within 5 minutes).
pytest_plugins = ["tests.plugins.long_first"]

# Playwright's sync API runs an event loop in the test thread; the ORM calls in the same test
# are still synchronous, so Django's async-safety guard must be told.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

PASSWORD = "correct horse battery staple"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


STUDY_TAXONOMY_ID = pytest.StashKey[int]()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings, django_db_keepdb, django_db_createdb, django_db_blocker
) -> None:
    """A new xdist worker's database is a copy of one migrated template, not migrated again
    (`harness.clone_for_worker`); `--create-db` still migrates each."""
    if django_db_keepdb and not django_db_createdb:
        with django_db_blocker.unblock():
            harness.clone_for_worker(connection)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker, request) -> Iterator[None]:
    """The test database (one per xdist worker), with the study taxonomy loaded once, and
    emptied after a transactional test by DELETEs of the tables it wrote, not a TRUNCATE of
    every table (`harness.flush_sql`)."""
    from django.core.management.commands import flush

    with django_db_blocker.unblock():
        request.config.stash[STUDY_TAXONOMY_ID] = harness.install()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flush, "sql_flush", harness.flush_sql)
        patch.setattr(flush, "emit_post_migrate_signal", harness.after_flush)
        yield


@pytest.fixture(scope="session", autouse=True)
def _static_files_scanned_once() -> Iterator[None]:
    """A new test client's middleware reuses WhiteNoise's first scan of the static files
    (`harness.share_static_files`)."""
    with pytest.MonkeyPatch.context() as patch:
        harness.share_static_files(patch)
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """After a test's teardown (a transactional test's flush included), the study taxonomy is
    back for the next test."""
    result = yield
    version_id = item.config.stash.get(STUDY_TAXONOMY_ID, None)
    if version_id is not None and nextitem is not None:
        from pytest_django.plugin import blocking_manager_key

        with item.config.stash[blocking_manager_key].unblock():
            harness.restore(version_id)
    return result


T = TypeVar("T")


@pytest.fixture(scope="module")
def module_db(
    request, django_db_setup, django_db_blocker
) -> Iterator[Callable[[Callable[[], T]], T]]:
    """Rows built once for a module's tests: `module_db(build)` runs `build` in a transaction
    that stays open until the module's last test, each test in a savepoint of it (pytest-django
    rolls the savepoint back after the test, so a test may write). Foreign keys are checked
    once, after the build, not again after each test. Module fixtures return ids; a test
    reads its own objects. The rows are there for every later test of the module, even one
    that does not ask for them: a test that needs a database without them comes first.

    A transactional test commits and flushes, so none may run while the transaction is open:
    such a test comes before the first test of its module that asks for shared rows."""
    with django_db_blocker.unblock():
        block = transaction.atomic()
        block.__enter__()
    request.config.stash[SHARED_ROWS_OF] = request.node.nodeid

    def build(make: Callable[[], T]) -> T:
        with django_db_blocker.unblock():
            result = make()
            connection.check_constraints()
        return result

    try:
        yield build
    finally:
        del request.config.stash[SHARED_ROWS_OF]
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            block.__exit__(None, None, None)


SHARED_ROWS_OF = pytest.StashKey[str]()


class SharedRowsOpen(RuntimeError):
    """A transactional test came while a module's shared rows were in an open transaction."""


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    module = item.config.stash.get(SHARED_ROWS_OF, None)
    if module is not None and transactional(item):
        raise SharedRowsOpen(
            f"{item.nodeid} commits, but {module} holds shared rows (module_db) in an open "
            "transaction: put the transactional test before the module's first test that asks "
            "for them"
        )


@pytest.fixture
def taxonomy_version(db, request) -> TaxonomyVersion:
    """The study's taxonomy (loaded once per session: never load it again in a test)."""
    return TaxonomyVersion.objects.get(pk=request.config.stash[STUDY_TAXONOMY_ID])


@pytest.fixture
def no_taxonomy(db) -> None:
    """For a test of loading a taxonomy into an empty database: the shared one is deleted in
    the test's transaction (and back when it rolls back)."""
    TaxonomyVersion.objects.all().delete()
    Taxonomy.objects.all().delete()


class SlowTierOnly(RuntimeError):
    """A test outside the slow tier started a process."""


@pytest.fixture(autouse=True)
def _processes_only_in_the_slow_tier(request, monkeypatch) -> None:
    """A subprocess (a fresh interpreter, a Celery worker, bin/serve) costs seconds: a test
    that starts one is marked `slow` (or `browser`), so `bin/test --fast` never waits on it."""
    if request.node.get_closest_marker("slow") or request.node.get_closest_marker("browser"):
        return

    def refuse(self, args, *rest, **kwargs):
        raise SlowTierOnly(
            f"{request.node.nodeid} starts a process ({args!r}): mark it slow "
            "(@pytest.mark.slow) so that bin/test --fast leaves it out"
        )

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)


@pytest.fixture(autouse=True)
def _default_language() -> None:
    """A test request with Accept-Language leaves its language active in the thread
    (LocaleMiddleware never deactivates it): every test starts in the default language, so an
    English assertion does not depend on which test ran before it on the same worker."""
    translation.activate(settings.LANGUAGE_CODE)


def make_user(username: str, **extra) -> User:
    return User.objects.create_user(username=username, password=PASSWORD, **extra)


@pytest.fixture
def lead(db):
    return make_user("lena-lead")


@pytest.fixture
def annotator(db):
    return make_user("ada-annotator")


@pytest.fixture
def other_annotator(db):
    return make_user("otto-annotator")


@pytest.fixture
def researcher(db):
    return make_user("rita-researcher")


@pytest.fixture
def outsider(db):
    return make_user("oscar-outsider")


def add_members(project: Project, *members: tuple[User, str]) -> None:
    """The personas as members of the project, each with the pseudonym `rater-<user id>`."""
    for user, role in members:
        Membership.objects.create(
            project=project, user=user, role=role, pseudonym=f"rater-{user.pk}"
        )


@pytest.fixture
def project(taxonomy_version, lead, annotator, other_annotator, researcher):
    project = Project.objects.create(name="LLM issues pilot", taxonomy_version=taxonomy_version)
    add_members(
        project,
        (lead, Role.LEAD),
        (annotator, Role.ANNOTATOR),
        (other_annotator, Role.ANNOTATOR),
        (researcher, Role.RESEARCHER),
    )
    return project


@pytest.fixture
def repository(db):
    return Repository.objects.create(
        forge=Repository.Forge.GITHUB,
        api_url="https://api.github.com",
        owner="NVIDIA",
        name="Megatron-LM",
        group="Megatron",
        is_framework=False,
    )


def make_issue(repository: Repository, number: int | str, **fields) -> Issue:
    defaults = {
        "url": f"{repository.web_url}/issues/{number}",
        "title": f"Issue {number}",
        "body": "Training hangs at step 0 with NCCL timeout.",
        "state": "open",
    }
    defaults.update(fields)
    return Issue.objects.create(repository=repository, number=str(number), **defaults)


@pytest.fixture
def issues_in_project(project, repository):
    """Six issues in the project's scope, in queue order."""
    issues = [make_issue(repository, 100 + i) for i in range(6)]
    for i, issue in enumerate(issues):
        ProjectIssue.objects.create(project=project, issue=issue, position=i)
    return issues


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def log_in(page, live_server, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


class HeldCatalogue:
    """The translation catalogue (`/jsi18n/`) held back: every deferred script after it, and
    DOMContentLoaded (where htmx starts listening), wait until `release()`. For tests of what
    a person types before the page's scripts run."""

    def __init__(self, page) -> None:
        self.page = page
        self.routes: list = []
        page.route("**/jsi18n/**", lambda route: self.routes.append(route))

    def release(self) -> None:
        """Waits (5 s at most) for the page to ask for the catalogue, then lets it through."""
        for _ in range(250):
            if self.routes:
                break
            self.page.wait_for_timeout(20)
        assert self.routes, "the page never asked for the translation catalogue"
        # DOMContentLoaded has not fired: the held catalogue is a deferred script.
        assert self.page.evaluate("document.readyState") == "interactive"
        self.routes[0].continue_()


def first_saved(page, queryset):
    """The first row of `queryset` once the page's request has written it, polling for about
    5 s (None if it never came): a click's form post lands in the live server's thread."""
    for _ in range(50):
        row = queryset.first()
        if row is not None:
            return row
        page.wait_for_timeout(100)
    return None
