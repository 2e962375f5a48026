"""The request types views annotate with: Django's `HttpRequest` plus what the middleware adds.

`HtmxRequest` carries django-htmx's `request.htmx`; `AuthedRequest` is a request behind
`login_required`, whose user is signed in (a `User`, never `AnonymousUser`). These are for the
type checker: at run time every request is the plain `HttpRequest` the middleware decorated.
"""

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxRequest(HttpRequest):
    htmx: HtmxDetails


class AuthedRequest(HtmxRequest):
    user: User
