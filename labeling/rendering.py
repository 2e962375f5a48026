"""Issue text to safe HTML: Markdown with markdown-it-py, then an allowlist sanitizer (nh3).

Issue bodies and comments are hostile input. The sanitizer, not the Markdown renderer, is the
security boundary: raw HTML is allowed through markdown-it so that GitHub-style `<details>` or
`<img>` survive, and nh3 then keeps only the tags and attributes below, only http(s)/mailto
URLs, and drops scripts, styles, event handlers, forms, iframes and SVG. Images are never
loaded on sight: each becomes a button that loads it when clicked (static/js/labeling.js).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

import nh3
from django.utils.html import escape
from django.utils.translation import gettext

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre",
    "s", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr",
    "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "td": {"align"},
    "th": {"align"},
    "ol": {"start"},
}
URL_SCHEMES = {"http", "https", "mailto"}
# Dropped with everything inside them, not just the tags.
# (Forms and text areas lose only their tags: a stray "<textarea>" in a report keeps its text.)
CLEAN_CONTENT_TAGS = {"script", "style", "svg", "math", "iframe", "object", "embed", "noscript",
                      "template"}  # fmt: skip


@functools.cache
def _markdown() -> MarkdownIt:
    # markdown-it-py is some 60 modules that only rendering uses: imported here, at the first
    # render, so `manage.py` and Celery workers do not load it at start (config.wsgi imports it
    # at a web worker's boot).
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True, "linkify": False}).enable(
        ["table", "strikethrough"]
    )


# nh3 writes attributes double-quoted and escaped, so matching its own output is reliable.
_IMG = re.compile(r"<img\b([^>]*)>")
_ATTR = re.compile(r'\b(src|alt)="([^"]*)"')


def _image_placeholder(match: re.Match[str]) -> str:
    attrs = dict(_ATTR.findall(match.group(1)))
    src = attrs.get("src", "")
    alt = attrs.get("alt", "") or escape(gettext("image"))
    if not src.startswith(("http://", "https://")):
        return f'<span class="img-placeholder">[{alt}]</span>'
    # Values are already escaped by nh3 and stay inside double quotes. The button's words are
    # in the request's language (issue_context caches rendered HTML per language).
    text = escape(gettext("Load image: %(alt)s")) % {"alt": alt}
    return (
        f'<button type="button" class="img-placeholder" data-src="{src}" data-alt="{alt}">'
        f"{text}</button>"
    )


def sanitize(html: str) -> str:
    cleaned = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        clean_content_tags=CLEAN_CONTENT_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow ugc",
        strip_comments=True,
    )
    return _IMG.sub(_image_placeholder, cleaned)


def render_markdown(text: str) -> str:
    """Issue Markdown to HTML that is safe to mark safe in a template."""
    if not text:
        return ""
    return sanitize(_markdown().render(text))
