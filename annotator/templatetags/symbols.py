"""`{{ heading|symbols }}`: a text with its Greek letters kept lower-case in upper-cased headers.

Table headers are upper-cased by CSS (`.table th`), which turns κ into a capital kappa, a
letter that reads as a Latin K. The filter escapes the text and wraps each Greek letter in
`<span class="sym">`, which the style sheet leaves as written (`text-transform: none`).
"""

from __future__ import annotations

import re

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_GREEK = re.compile(r"([\u0370-\u03ff\u1f00-\u1fff]+)")


@register.filter
def symbols(text: object) -> SafeString:
    escaped = str(conditional_escape(str(text)))
    return mark_safe(_GREEK.sub(r'<span class="sym">\1</span>', escaped))  # noqa: S308 (escaped)
