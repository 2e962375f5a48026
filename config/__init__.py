"""The site: settings, URLs, WSGI, the Celery app, environment parsing, cache, middleware,
system checks. No app imports this package except through Django's settings."""

from config.celery import app as celery_app

__all__ = ["celery_app"]
