"""The search box's syntax, read once for every database: words, "a phrase", -not, or.

It is PostgreSQL's `websearch_to_tsquery` syntax: terms side by side must all match, the word
`or` (any case) between two terms offers either side (`a b or c` is `(a and b) or c`), a term
in double quotes is a phrase (an unclosed quote runs to the end), a `-` before a word or a
phrase excludes it. `parse` reads it into `WebSearch`; the full-text search hands PostgreSQL its
`websearch_text()` (the same terms, written out plainly, so PostgreSQL reads what was read
here), and `to_q` makes the same search of case-insensitive substrings for a database without
full-text search (SQLite, the embedded first look). Pure: no database, no settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import reduce
from operator import and_, or_

from django.db.models import Q

# A token: an optional "-", then a quoted phrase (closed or running to the end) or a word.
_TOKEN = re.compile(r'(-?)(?:"([^"]*)"?|([^\s"]+))')
_OR = "or"


@dataclass(frozen=True)
class Term:
    """One word or phrase to find (`negated`: to exclude)."""

    text: str  # a word, or a phrase's words joined by single spaces
    negated: bool = False
    phrase: bool = False

    @property
    def words(self) -> int:
        return len(self.text.split())

    def written(self) -> str:
        """The term in the search syntax."""
        text = f'"{self.text}"' if self.phrase else self.text
        return f"-{text}" if self.negated else text


@dataclass(frozen=True)
class WebSearch:
    """A parsed search: alternatives (any may match), each a conjunction of terms."""

    alternatives: tuple[tuple[Term, ...], ...]

    @property
    def words(self) -> int:
        """How many words it names, a phrase's each counted."""
        return sum(term.words for terms in self.alternatives for term in terms)

    @property
    def only_excludes(self) -> bool:
        """Some alternative names nothing to find, only words to exclude (`-lorem`, or
        `memory or -lorem`): it matches nearly everything, read issue by issue."""
        return any(not any(not t.negated for t in terms) for terms in self.alternatives)

    def websearch_text(self) -> str:
        """The search written out again in the syntax, for `websearch_to_tsquery`."""
        return " or ".join(" ".join(t.written() for t in terms) for terms in self.alternatives)


def parse(q: str) -> WebSearch:
    """Read `q` as the search box's syntax (any text reads as some search: never an error)."""
    alternatives: list[tuple[Term, ...]] = []
    terms: list[Term] = []
    for match in _TOKEN.finditer(q):
        minus, phrase, word = match.groups()
        if word is not None and not minus and word.lower() == _OR:
            if terms:  # "or" at the start, or twice in a row, joins nothing: skipped
                alternatives.append(tuple(terms))
                terms = []
            continue
        text = " ".join((phrase if word is None else word).split())
        if text.strip("-"):  # "" and a lone "-" name nothing
            terms.append(Term(text, negated=bool(minus), phrase=word is None))
    if terms:
        alternatives.append(tuple(terms))
    return WebSearch(tuple(alternatives))


def to_q(search: WebSearch, fields: list[str]) -> Q:
    """The search as a condition on text `fields`: a term matches when it is a substring of
    any of them, ignoring case (a phrase: its words in order, one space apart). An empty
    search matches nothing."""

    def term_q(term: Term) -> Q:
        found = reduce(or_, (Q(**{f"{field}__icontains": term.text}) for field in fields))
        return ~found if term.negated else found

    if not search.alternatives:
        return Q(pk__in=[])
    return reduce(or_, (reduce(and_, map(term_q, terms)) for terms in search.alternatives))
