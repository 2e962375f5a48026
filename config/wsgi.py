"""The WSGI application gunicorn serves, warmed up at a worker's boot.

Management commands and Celery workers never import this module, so what it warms up costs
them nothing.
"""

import importlib
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# The agreement report's statistics libraries (statsmodels pulls in SciPy and pandas), ~1.5 s
# of imports. agreement.measures imports them only where it computes, so that commands and
# Celery workers start fast; a web worker pays for them here, at boot, instead of the first
# lead or researcher who opens the agreement report, Table I's export or the API's report.
STATISTICS_MODULES = ("numpy", "krippendorff", "statsmodels.stats.inter_rater")
# Likewise the Markdown parser of issue texts (labeling.rendering imports it on first use), and
# the Celery app (with kombu, yaml, click), which annotator.outbox imports when a request first
# queues a task (an export, a release, a sync, ...): config/__init__.
RENDERING_MODULES = ("markdown_it",)
TASK_MODULES = ("config.celery",)


def _warm_up() -> None:
    """Import every view, the statistics libraries and Celery now, so a worker's first request does
    not wait for them."""
    from django.urls import get_resolver

    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 (imports the URLconf and, through it, every view)
    resolver.reverse_dict  # noqa: B018 (compiles the routes)
    for name in STATISTICS_MODULES + RENDERING_MODULES + TASK_MODULES:
        importlib.import_module(name)


_warm_up()
