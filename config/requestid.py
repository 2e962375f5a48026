"""The id of the request (or of the task a request started) being served, for the logs.

`config.observability.RequestMiddleware` sets it for each request (a fresh one, or the
`X-Request-ID` the client sent when it is sane); a Celery task started during the request
carries it in its message headers and sets it again in the worker (`config.observability`'s
Celery signals). `RequestIdFilter` puts it on every log record as `request_id`. Kept small,
with no Django import: the logging configuration loads it before the apps.
"""

from __future__ import annotations

import logging
import re
import uuid
from contextvars import ContextVar

current: ContextVar[str | None] = ContextVar("request_id", default=None)

# An incoming id is kept only when it is short and plain (it goes into every log line and
# into task headers); anything else is replaced by a fresh one.
_SANE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]{7,127}")
HEADER = "X-Request-ID"
TASK_HEADER = "annotator_request_id"


def sane(value: str | None) -> str | None:
    """`value` if it may serve as a request id, else None."""
    if value and _SANE.fullmatch(value):
        return value
    return None


def new() -> str:
    return uuid.uuid4().hex


def get() -> str | None:
    return current.get()


class RequestIdFilter(logging.Filter):
    """Adds `request_id` (None outside a request or task) to every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current.get()
        return True
