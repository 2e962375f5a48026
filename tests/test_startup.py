"""Start-up cost: what a process imports before it does any work (issue 13).

Every management command and every Celery worker loads the URL conf (`manage.py check` does,
so does any command that reverses a URL) and the tasks of every app. statsmodels, SciPy and
pandas cost ~1.5 s to import, and only the agreement report computes with them, so they are
imported where it computes (`agreement.measures`). A web worker is the exception on purpose:
`config.wsgi` imports them at boot, so the first agreement page a lead opens is not 1.5 s slower.
The machine raters' libraries (scikit-learn, openai, ppi_py) are imported where they are used
too, and no process imports them at start (issue 30). Nor Celery (with kombu, amqp and click,
~10 % of the imports of `manage.py check`): a process imports it when it first hands a task
over (annotator.outbox.celery_app), a worker and a web worker at boot; services queue tasks
by their Celery names, so a page that asks for an export imports no tasks module.

Each scenario runs a fresh interpreter (this test process has long imported everything) with
the test settings' environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Fresh interpreters, one per scenario: the slow tier (not in bin/test --fast).
pytestmark = pytest.mark.slow
HEAVY = ("statsmodels", "scipy", "pandas", "numpy", "krippendorff")
# The machine raters' libraries (issue 30): the classifier's scikit-learn, the llm rater's
# openai client, the estimates' ppi_py (which pulls in numba); imported where they are used.
RATERS_HEAVY = ("sklearn", "openai", "ppi_py", "numba", "joblib")

# Celery and the libraries only it brings (yaml comes with DRF too, so it is not one of them).
CELERY = ("celery", "kombu", "amqp", "click", "billiard", "vine")
CHECK = (
    "import runpy\n"
    "sys.argv = ['manage.py', 'check']\n"
    "runpy.run_path('manage.py', run_name='__main__')"
)


def imported_by(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter has imported after running `code`."""
    report = f"import json; print(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\n{report}"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def heavy_imported_by(code: str) -> list[str]:
    """The statistics packages a fresh interpreter has imported after running `code`."""
    return imported_by(code, HEAVY + RATERS_HEAVY)


def test_loading_the_url_conf_imports_no_statistics_library():
    # What `manage.py check`, and any command that reverses a URL, does first.
    loaded = heavy_imported_by(
        "import django; django.setup()\n"
        "from django.urls import get_resolver; get_resolver().url_patterns"
    )
    assert loaded == []


def test_manage_py_check_imports_no_statistics_or_machine_rater_library():
    # The command itself, in its own process: settings, apps, the URL conf, every check.
    loaded = heavy_imported_by(
        "import runpy\n"
        "sys.argv = ['manage.py', 'check']\n"
        "runpy.run_path('manage.py', run_name='__main__')"
    )
    assert loaded == []


def test_the_check_sees_a_library_imported_at_start():
    # The scenario above can fail: a module that imports numpy at start is reported.
    loaded = heavy_imported_by(
        "import runpy\n"
        "sys.argv = ['manage.py', 'check']\n"
        "runpy.run_path('manage.py', run_name='__main__')\n"
        "import numpy"
    )
    assert loaded == ["numpy"]


def test_a_celery_worker_loading_every_task_imports_no_statistics_library():
    # A worker imports every app's tasks module at boot (autodiscovery), and the URL conf
    # when a task builds a link.
    loaded = heavy_imported_by(
        "import django; django.setup()\n"
        "from config.celery import app; app.loader.import_default_modules()\n"
        "from django.urls import get_resolver; get_resolver().url_patterns"
    )
    assert loaded == []


def test_a_web_worker_imports_the_statistics_libraries_at_boot():
    # gunicorn imports config.wsgi once per worker: the agreement report's libraries are
    # paid for there, not by the first lead who opens the report.
    loaded = heavy_imported_by("import config.wsgi")
    assert {"statsmodels", "scipy", "numpy", "krippendorff"} <= set(loaded)


def test_manage_py_check_imports_no_celery():
    # Settings, apps (their signals), the URL conf with every view and API, every check: none
    # of them queues a task, so none imports Celery.
    assert imported_by(CHECK, CELERY) == []


def test_the_check_sees_celery_imported_at_start():
    # The scenario above can fail: a module that imports a tasks module at start is reported.
    assert "celery" in imported_by(f"{CHECK}\nimport dataset.tasks", CELERY)


def test_a_process_imports_celery_when_it_first_hands_a_task_over():
    # Django set up, the URL conf loaded: no Celery; the outbox's app brings it, the site's.
    loaded = imported_by(
        "import django; django.setup()\n"
        "from django.urls import get_resolver; get_resolver().url_patterns\n"
        "assert 'celery' not in sys.modules\n"
        "from annotator import outbox\n"
        "assert outbox.celery_app().main == 'annotator'",
        CELERY,
    )
    assert {"celery", "kombu"} <= set(loaded)


def test_a_web_worker_imports_celery_at_boot():
    # Its first request that queues a task (an export, a sync) does not pay for the import.
    assert "celery" in imported_by("import config.wsgi", CELERY)


def _task_names_in_the_code() -> dict[str, str]:
    """Every module-level `NAME_TASK = "…"` of the project's apps: the names services queue
    their tasks by (they import no tasks module)."""
    import ast

    names = {}
    for path in ROOT.glob("*/*.py"):
        if path.parts[-2] in {"tests", "bench", "bin", ".venv"}:
            continue
        for node in ast.parse(path.read_text()).body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.endswith("_TASK")
                and isinstance(node.value, ast.Constant)
            ):
                names[f"{path.relative_to(ROOT)}:{node.targets[0].id}"] = node.value.value
    return names


def test_every_task_a_service_queues_by_name_is_one_a_worker_registers():
    # A worker finds the tasks by discovery; a misspelt name would be queued and never run.
    from annotator import jobsweep, outbox

    named = _task_names_in_the_code()
    # The probe: the constants are found (the jobs' and the dashboard's among them).
    assert {"dataset/models.py:EXPORT_TASK", "labeling/dashboard.py:REFRESH_TASK"} <= set(named)
    app = outbox.celery_app()
    app.loader.import_default_modules()
    assert {where: name for where, name in named.items() if name not in app.tasks} == {}
    # Each kind of job, queued by its `TASK` (first, and again by the job sweep).
    kinds = {kind.__name__: kind.TASK for kind in jobsweep.job_kinds()}
    assert len(kinds) == 5 and {k: t for k, t in kinds.items() if t not in app.tasks} == {}
