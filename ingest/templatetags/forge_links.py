"""`{{ url|http_link }}`: a forge's URL if it may be a link (http or https with a host), else "".

Issue URLs come from the forges (`html_url`), which are hostile: a `javascript:` or `data:` URL
must never become an href, whatever the Content-Security-Policy would do with a click.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django import template

register = template.Library()


@register.filter
def http_link(url: object) -> str:
    text = str(url or "")
    if text != text.strip() or any(ord(c) < 0x20 or c == "\x7f" for c in text):
        return ""  # browsers drop such characters before reading the scheme: never guess
    try:
        parts = urlsplit(text)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return ""
    return text
