"""The embedded first-look setup (`bin/serve` without DATABASE_URL or REDIS_URL) for scripts
that tests run as a separate process, since the suite itself runs on PostgreSQL: Django on a
SQLite file in the given data directory, migrated, with the demo project."""

import os


def start(data_dir: str) -> None:
    """Set up Django on the embedded SQLite database in `data_dir`, migrate, load the demo."""
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        DATA_DIR=data_dir,
        DEBUG="0",
        ALLOWED_HOSTS="testserver",
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    import django

    django.setup()

    from django.core.management import call_command
    from django.db import connection

    assert connection.vendor == "sqlite", connection.vendor
    call_command("migrate", verbosity=0)
    call_command("load_demo", verbosity=0)
