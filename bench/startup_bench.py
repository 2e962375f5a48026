"""`manage.py check` start-up time of several checkouts, interleaved run by run.

    .venv/bin/python bench/startup_bench.py --runs 5 /path/to/before /path/to/after
    .venv/bin/python bench/startup_bench.py /path/to/after:nopyc /path/to/after
    .venv/bin/python bench/startup_bench.py --runs 10 --floor /path/to/before /path/to/after

Each checkout runs its own `.venv/bin/python manage.py check` with PYTHONDONTWRITEBYTECODE=1
(as on this workplace's machines and in the Docker image): bytecode is read where it exists,
never written. `ROOT:nopyc` ignores every `__pycache__` (PYTHONPYCACHEPREFIX to an empty
folder), as a virtual environment installed with `--no-compile` and never byte-compiled is.
Reports wall and CPU seconds (user + system of the child) per run and their medians; the runs
of the checkouts alternate, so a busy minute of a shared host weighs on all of them alike.
`--floor` adds Django alone, for comparison: a `manage.py check` of a project with only
Django's contrib apps (admin, auth, contenttypes, sessions, messages, staticfiles), SQLite and
the admin's URLs, run by the first checkout's Python (its `.venv`, so the same Django and
bytecode).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def one_check(root: Path, nopyc: bool, empty: str) -> tuple[float, float]:
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "SECRET_KEY": "bench-startup",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    env.pop("PYTHONPYCACHEPREFIX", None)
    if nopyc:
        env["PYTHONPYCACHEPREFIX"] = empty
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [str(root / ".venv/bin/python"), "manage.py", "check"],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


FLOOR_SETTINGS = """
import os
SECRET_KEY = os.environ["SECRET_KEY"]
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
    "django.contrib.sessions", "django.contrib.messages", "django.contrib.staticfiles",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "config.urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
"""
FLOOR_URLS = """
from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
"""


def make_floor(folder: Path, checkout: Path) -> Path:
    """A project of Django's contrib apps only, in `folder`, with `checkout`'s virtualenv."""
    (folder / "config").mkdir(parents=True)
    (folder / "config/__init__.py").write_text("")
    (folder / "config/settings.py").write_text(FLOOR_SETTINGS)
    (folder / "config/urls.py").write_text(FLOOR_URLS)
    shutil.copy(checkout / "manage.py", folder / "manage.py")
    (folder / ".venv").symlink_to(checkout / ".venv")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="+", help="checkout, or checkout:nopyc")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--floor", action="store_true", help="also time Django alone")
    args = parser.parse_args()
    targets = []
    for given in args.roots:
        path, _, flag = given.partition(":")
        targets.append((given, Path(path).resolve(), flag == "nopyc"))
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in targets}
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as scratch:
        if args.floor:
            floor = make_floor(Path(scratch) / "floor", targets[0][1])
            targets.append(("floor (Django's contrib apps only)", floor, False))
            times[targets[-1][0]] = []
        for _ in range(args.runs):
            for name, root, nopyc in targets:
                times[name].append(one_check(root, nopyc, empty))
    for name, runs in times.items():
        walls = ", ".join(f"{w:.2f}" for w, _ in runs)
        cpus = ", ".join(f"{c:.2f}" for _, c in runs)
        print(
            f"{name}: wall {walls} s (median {statistics.median(w for w, _ in runs):.2f});"
            f" CPU {cpus} s (median {statistics.median(c for _, c in runs):.2f})"
        )


if __name__ == "__main__":
    main()
