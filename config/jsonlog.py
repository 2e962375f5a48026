"""Log records as JSON lines (`LOG_FORMAT=json`), through python-json-logger.

Each line is one object: `timestamp` (UTC, ISO 8601), `level`, `logger`, `message`,
`request_id` (`config.requestid`; null outside a request or task), then what the record
carries as `extra` (a request's `path`, `status`, `duration`; a task's `task`, `task_id`,
`outcome`, `duration`) and `exc_info` for a traceback. Loaded by the logging configuration
only in JSON mode, so the text mode never imports the library.
"""

from __future__ import annotations

from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

FIELDS = ["levelname", "name", "message", "request_id"]
RENAMED = {"levelname": "level", "name": "logger"}
# Django's request logger passes the request object: its text has the query string, and
# the line already has the path and status.
LEFT_OUT = [*RESERVED_ATTRS, "request", "server_time", "status_code"]


class JsonFormatter(_JsonFormatter):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("timestamp", True)
        super().__init__(
            FIELDS, rename_fields=RENAMED, reserved_attrs=LEFT_OUT, json_ensure_ascii=False,
            **kwargs,
        )  # fmt: skip

    def add_fields(self, log_data: dict[str, Any], record: Any, message_dict: Any) -> None:
        super().add_fields(log_data, record, message_dict)
        # Django's request logger (a 4xx/5xx) says the status under its own name.
        if "status" not in log_data and getattr(record, "status_code", None) is not None:
            log_data["status"] = record.status_code
