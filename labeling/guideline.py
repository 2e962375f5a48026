"""The project's guideline: Markdown the leads write, shown to annotators above every task and in
the labeling page's help dialog, and on its own page (`labeling.guideline_views`).

The text is rendered through the project's sanitiser (`labeling.rendering.render_markdown`),
never marked safe raw. A rendering is kept in the process by the text itself: the labeling page
shows the guideline on every issue, and the text changes only when a lead saves it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

from annotator.models import Project
from labeling.permissions import LABELER_ROLES
from labeling.rendering import render_markdown

# Long enough for a few pages of rules with examples; short enough to read above each task.
MAX_GUIDELINE_CHARS = 20_000

# Who reads the guideline page: the people who label, leads included (leads and admins also edit
# it, `LEAD_ROLES`). Researchers read the final data, not the labeling instructions.
GUIDELINE_ROLES = LABELER_ROLES


@dataclass(frozen=True)
class Guideline:
    """A rendered guideline: its sanitised HTML and a short digest of its text (a changed
    guideline gets a new digest, so the labeling page opens it again for everyone)."""

    html: SafeString
    digest: str


def normalise(text: str) -> str:
    """Line ends as "\\n" (browsers send "\\r\\n", which would count twice against the limit)
    and no trailing blank space."""
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip()


@lru_cache(maxsize=32)
def _rendered(text: str, language: str | None) -> Guideline:
    # Keyed by language too: the rendering words its image buttons in the reader's language.
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    # Safe: the HTML came out of the sanitiser.
    return Guideline(mark_safe(render_markdown(text)), digest)  # noqa: S308


def render(text: str) -> Guideline | None:
    """The guideline rendered, or None when there is none (only blank space)."""
    text = normalise(text or "")
    return _rendered(text, get_language()) if text else None


def save(project: Project, text: str) -> None:
    """Store a lead's guideline (already validated by `GuidelineForm`)."""
    project.guideline = normalise(text)
    project.save(update_fields=["guideline"])
