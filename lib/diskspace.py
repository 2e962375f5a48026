"""The error a job stores when writing its file failed: a full disk said so plainly.

An export or a release is written beside its final name and renamed (or linked) when complete,
and the partial file is deleted on any error, so a full disk never leaves a file offered for
download; the job fails with this message, and the next attempt after space returns builds it
(docs/OPERATIONS.md, "Faults"). The message is the server's own words, stored and shown as
they are, like the other errors of a job.
"""

from __future__ import annotations

import errno

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_FULL


def job_error(exc: BaseException) -> str:
    """The text a failed job keeps: for a full disk (or quota) what happened and what to do,
    without the server's paths; otherwise the exception's type and message."""
    if is_disk_full(exc):
        return (
            "The server's disk is full (no space left on device): the file was not written "
            "and nothing was published. Free space on the server, then try again."
        )
    return f"{type(exc).__name__}: {exc}"
