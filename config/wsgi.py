import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()


def _warm_up() -> None:
    """Import every view now (the agreement views pull in statsmodels and SciPy), so a
    worker's first volunteer does not wait seconds for it."""
    from django.urls import get_resolver

    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 (imports the URLconf and, through it, every view)
    resolver.reverse_dict  # noqa: B018 (compiles the routes)


_warm_up()
