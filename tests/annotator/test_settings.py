"""Settings come from the environment; production refuses to start without SECRET_KEY."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list

ROOT = Path(__file__).resolve().parents[2]


def run_settings(env: dict, code: str = "") -> subprocess.CompletedProcess:
    """Import the settings module in a fresh interpreter with exactly this environment."""
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    script = "import config.settings as s\n" + code
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_env_bool_accepts_common_spellings(monkeypatch):
    for value, expected in [
        ("1", True),
        ("yes", True),
        ("TRUE", True),
        ("0", False),
        ("off", False),
        ("", False),
    ]:
        monkeypatch.setenv("FLAG", value)
        assert env_bool("FLAG") is expected
    monkeypatch.delenv("FLAG")
    assert env_bool("FLAG", default=True) is True


def test_env_bool_rejects_nonsense(monkeypatch):
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="FLAG='maybe' is not a boolean"):
        env_bool("FLAG")


def test_env_int_and_list(monkeypatch):
    monkeypatch.setenv("N", "12")
    monkeypatch.setenv("HOSTS", " a.example , b.example,,")
    assert env_int("N", 3) == 12
    assert env_list("HOSTS") == ["a.example", "b.example"]
    monkeypatch.setenv("N", "twelve")
    with pytest.raises(ImproperlyConfigured, match="N='twelve' is not an integer"):
        env_int("N", 3)


@pytest.mark.slow  # a fresh interpreter reads the production settings
def test_production_refuses_to_start_without_secret_key(tmp_path):
    result = run_settings({"DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


@pytest.mark.slow  # a fresh interpreter reads the production settings
def test_debug_defaults_to_off_and_urls_configure_database_and_celery(tmp_path):
    result = run_settings(
        {
            "DATA_DIR": str(tmp_path),
            "SECRET_KEY": "x" * 50,
            "DATABASE_URL": "postgres://u:p@db.example:5433/study",
            "REDIS_URL": "redis://cache.example:6380/2",
            "ALLOWED_HOSTS": "annotate.example",
        },
        "db = s.DATABASES['default']\n"
        "print(s.DEBUG, db['ENGINE'], db['HOST'], db['PORT'], db['NAME'])\n"
        "print(s.CELERY_BROKER_URL, s.CELERY_TASK_ALWAYS_EAGER, s.ALLOWED_HOSTS)\n",
    )
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first == "False django.db.backends.postgresql db.example 5433 study"
    assert second == "redis://cache.example:6380/2 False ['annotate.example']"


@pytest.mark.slow  # a fresh interpreter reads the production settings
def test_embedded_default_is_sqlite_under_data_dir_with_in_process_tasks(tmp_path):
    result = run_settings(
        {"DATA_DIR": str(tmp_path), "DEBUG": "1"},
        "print(s.DATABASES['default']['ENGINE'], s.DATABASES['default']['NAME'])\n"
        "print(s.CELERY_TASK_ALWAYS_EAGER)\n",
    )
    assert result.returncode == 0, result.stderr
    engine_line, eager = result.stdout.splitlines()
    assert engine_line == f"django.db.backends.sqlite3 {tmp_path / 'db.sqlite3'}"
    assert eager == "True"
    # Development generates a key once and keeps it in DATA_DIR, not in code.
    assert (tmp_path / "secret_key").stat().st_size > 40


@pytest.mark.slow  # a fresh interpreter reads the production settings
def test_check_deploy_passes_with_production_settings(tmp_path):
    env = {
        "DATA_DIR": str(tmp_path),
        "SECRET_KEY": "kQ7-vX2!pL9zR4#mN8@wB3$cT6%yH1^jD5&fG0*sA" * 2,
        "ALLOWED_HOSTS": "a.example",
        "DATABASE_URL": os.environ["DATABASE_URL"],
    }
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.django_db
def test_responses_carry_a_csp_that_forbids_inline_scripts(client):
    response = client.get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    script_src = next(d for d in policy.split(";") if d.strip().startswith("script-src"))
    assert "'self'" in script_src
    assert "unsafe-inline" not in script_src
    assert "object-src 'none'" in policy
