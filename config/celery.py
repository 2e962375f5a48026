"""The Celery application; tasks live in each app's tasks.py.

Imported by whoever needs it, never at start-up (config/__init__): a worker and beat
(`-A config`), a process handing a task over (annotator.outbox.celery_app), a web worker at
boot (config.wsgi). The site's Celery signal receivers (request ids and metrics,
config.observability) are connected here, so every process that publishes or runs a task has
them.
"""

import os

from celery import Celery

from config import observability

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("annotator")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
observability.connect_celery_signals()


if os.environ.get("LOG_FORMAT") == "json":
    from celery.signals import setup_logging

    @setup_logging.connect(weak=False)
    def _site_logging(**_: object) -> None:
        """A worker logs JSON lines through the site's LOGGING (config.jsonlog), not in
        Celery's own format: with a receiver of this signal Celery leaves logging alone."""
        import logging.config

        from django.conf import settings

        logging.config.dictConfig(settings.LOGGING)
        logging.captureWarnings(True)  # a warning too is a JSON line, not free text
