"""Messages a job stores for people who read them later, each reader in their own language.

A job runs in one language (a worker's, or that of whoever queued it); the people who read what
it stored may read another. A message the code can name is stored as its English msgid and its
parameters (`dump`: a small JSON object in the text column), and `shown` translates it when it
is read, in the reader's language. Text stored before, or words the code did not write (a
server's own error), are shown as stored. Use `gettext_noop` for the msgid so that
makemessages finds it, and `%(name)s` placeholders, as everywhere (docs/CONVENTIONS.md).
"""

from __future__ import annotations

import json

from django.utils.translation import gettext

_KEY = "msgid"
_START = '{"' + _KEY + '":'


def dump(msgid: str, **params: str | int | float) -> str:
    """The stored form of `msgid % params`: translated each time it is shown."""
    return json.dumps({_KEY: msgid, "params": params}, ensure_ascii=False)


def shown(stored: str) -> str:
    """A stored message in the active language (a plain text as it is)."""
    if not stored.startswith(_START):
        return stored
    try:
        message = json.loads(stored)
        return gettext(message[_KEY]) % message["params"]
    except (ValueError, KeyError, TypeError):
        return stored  # not one of ours after all: shown as stored
