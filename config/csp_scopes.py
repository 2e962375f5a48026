"""Content-Security-Policy for pages the app does not write: the admin and DRF's browsable API.

The app's own pages keep the strict policy of ``settings.CONTENT_SECURITY_POLICY`` (scripts and
styles from our origin only). Django's admin and DRF's browsable API ship templates with a
``<style>`` element (the admin's change list without actions, DRF's Pygments styles), and DRF's
also write ``style="…"`` attributes throughout (fieldsets, filters, the toolbar). For those pages
only, this middleware widens ``style-src``:

* ``<style>`` elements carry the request's nonce (``templates/admin/change_list.html``,
  ``templates/rest_framework/api.html``), so ``style-src`` is ``'self'`` plus that nonce, never
  ``'unsafe-inline'``;
* on the browsable API, ``style-src-attr 'unsafe-inline'`` lets DRF's style attributes apply. An
  attribute has no selectors and can load nothing from elsewhere (``img-src`` and ``font-src``
  stay ``'self'``), so it cannot read or leak the page the way an injected stylesheet could.

Scripts are untouched everywhere: ``script-src 'self'``, no inline script, no eval.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from csp.constants import NONCE, SELF, UNSAFE_INLINE
from django.http import HttpRequest, HttpResponse
from rest_framework.renderers import BrowsableAPIRenderer

ADMIN_DIRECTIVES = {"style-src": [SELF, NONCE]}
BROWSABLE_API_DIRECTIVES = {"style-src": [SELF, NONCE], "style-src-attr": [UNSAFE_INLINE]}


def scoped_directives(request: HttpRequest, response: HttpResponse) -> dict | None:
    """The directives that replace the site's for this response, or None to keep the site's."""
    if isinstance(getattr(response, "accepted_renderer", None), BrowsableAPIRenderer):
        return BROWSABLE_API_DIRECTIVES
    match = getattr(request, "resolver_match", None)
    if match is not None and "admin" in match.namespaces:
        return ADMIN_DIRECTIVES
    return None


class ScopedCSPMiddleware:
    """Place just after (inside) the CSP middleware: it marks the response before the header is
    built. A view's own ``@csp_replace`` keeps precedence over these."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        directives = scoped_directives(request, response)
        if directives:
            # django-csp's per-response override, an attribute the stubs do not know.
            target: Any = response
            own = getattr(target, "_csp_replace", None) or {}
            target._csp_replace = {**directives, **own}
        return response
