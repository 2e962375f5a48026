"""The site: settings, URLs, WSGI, the Celery app, environment parsing, cache, middleware,
system checks. No app imports this package except through Django's settings.

The Celery app (config.celery) is not imported with the package: a worker or beat finds it by
`-A config` (Celery looks for `config.celery.app`), a process that hands a task over imports it
then (annotator.outbox.celery_app, through settings.TASK_APP), and a web worker at boot
(config.wsgi). Celery with kombu, yaml and click is ~10 % of the imports of `manage.py check`,
which queues nothing (bench/RESULTS.md, "Start-up after issue 30")."""
