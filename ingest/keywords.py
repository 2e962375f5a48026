"""Keyword filtering of framework issues, as in the study (section III.A).

A keyword set is one compiled, case-insensitive regular expression. A keyword matches at token
boundaries: the characters on either side must not be letters, digits or `_`, so `yi` does not
match `yield` and `opt` does not match `option`, while `torch.distributed`, `flash_attn_2` and
`large language model` (any run of whitespace between the words) do.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ingest.models import KeywordSet
from functools import lru_cache
from pathlib import Path

DATA_FILE = Path(__file__).resolve().parent / "data" / "filter_keywords"
# List variable name in the study's file -> (keyword set name, repository group it filters).
STUDY_LISTS = {
    "pytorch_keywords": ("PyTorch", "PyTorch"),
    "mindspore_keywords": ("MindSpore", "MindSpore"),
    "tensorflow_keywords": ("TensorFlow", "TensorFlow"),
}
# What a keyword may not touch: a letter, a digit or an underscore (Python's \w).
_ASCII_SPLIT = bytes(c if chr(c).isalnum() or c == 0x5F else 0x20 for c in range(128)) + bytes(
    [0x20] * 128
)


class KeywordFileError(ValueError):
    """The keyword file is not a sequence of `name = [ 'string', … ]` assignments."""


def parse_keyword_file(text: str, filename: str = "filter_keywords") -> dict[str, list[str]]:
    """Parse `name = ['kw', …]` assignments as data (no code runs); keeps order and repeats."""
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        raise KeywordFileError(f"{filename}, line {exc.lineno}: {exc.msg}") from exc
    lists: dict[str, list[str]] = {}
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.List)
        ):
            raise KeywordFileError(f"{filename}, line {node.lineno}: expected `name = [ … ]`")
        words = []
        for item in node.value.elts:
            if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
                raise KeywordFileError(f"{filename}, line {item.lineno}: expected a string")
            words.append(item.value)
        lists[node.targets[0].id] = words
    return lists


def study_keyword_lists() -> dict[str, list[str]]:
    return parse_keyword_file(DATA_FILE.read_text(encoding="utf-8"), str(DATA_FILE))


def load_study_keyword_sets(keyword_set_model: type[KeywordSet]) -> None:
    """Create or refresh the study's three sets (the model class: current or historical)."""
    for var, words in study_keyword_lists().items():
        name, group = STUDY_LISTS.get(var, (var, ""))
        keyword_set_model.objects.update_or_create(
            name=name,
            defaults={
                "keywords": words,
                "default_for_group": group,
                "description": "The study's list (III.A), from ingest/data/filter_keywords.",
            },
        )


def normalize(keyword: str) -> str:
    return " ".join(keyword.split()).casefold()


def unique_keywords(keywords: Iterable[str]) -> list[str]:
    """Keywords without case-insensitive repeats, first spelling kept, blanks dropped."""
    seen: dict[str, str] = {}
    for kw in keywords:
        key = normalize(kw)
        if key and key not in seen:
            seen[key] = " ".join(kw.split())
    return list(seen.values())


@dataclass(frozen=True)
class Matcher:
    """One compiled regex for a whole keyword set, behind a cheap token prefilter."""

    pattern: re.Pattern[str] | None
    canonical: dict[str, str]
    # The words (\w+ runs) of each keyword, indexed by its first word: an ASCII text lacking
    # all the words of every keyword as whole tokens cannot match, and is not searched.
    words_by_first: dict[bytes, list[frozenset[bytes]]] | None = None

    def _may_match(self, text: str) -> bool:
        if self.words_by_first is None or not text.isascii():
            return True
        tokens = set(text.lower().encode("ascii").translate(_ASCII_SPLIT).split())
        return any(
            words <= tokens
            for first in tokens.intersection(self.words_by_first)
            for words in self.words_by_first[first]
        )

    def matches(self, *texts: str | None) -> list[str]:
        """Keywords found in the texts, in first-seen order, each once."""
        if self.pattern is None:
            return []
        found: dict[str, None] = {}
        for text in texts:
            if not text or not self._may_match(text):
                continue
            for m in self.pattern.finditer(text):
                found.setdefault(self.canonical[normalize(m.group(0))], None)
        return list(found)


def _trie_pattern(words: list[str]) -> str:
    """One alternation per character position (a trie), far faster than 84 alternatives."""
    trie: dict = {}
    for word in words:
        node = trie
        for ch in normalize(word):
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        alternatives = [
            (r"\s+" if ch == " " else re.escape(ch)) + emit(child)
            for ch, child in sorted(node.items())
            if ch
        ]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
        return f"(?:{body})?" if "" in node else body

    return emit(trie)


@lru_cache(maxsize=64)
def _compile(keywords: tuple[str, ...]) -> Matcher:
    words = unique_keywords(keywords)
    if not words:
        return Matcher(None, {})
    # The trie's optional tails are greedy: `gpt-j` wins over `gpt` at the same place, and
    # backtracking falls back to `gpt` when `gpt-j` is not followed by a boundary.
    pattern = re.compile(rf"(?<!\w)(?:{_trie_pattern(words)})(?!\w)", re.IGNORECASE)
    index: dict[bytes, list[frozenset[bytes]]] = {}
    for w in words:
        parts = re.findall(r"\w+", normalize(w))
        if not parts or not w.isascii() or not re.match(r"\w", w):
            # A keyword the token test cannot vouch for: search every text.
            return Matcher(pattern, {normalize(w): w for w in words}, None)
        encoded = [p.encode("ascii") for p in parts]
        index.setdefault(encoded[0], []).append(frozenset(encoded))
    return Matcher(pattern, {normalize(w): w for w in words}, index)


def compile_keywords(keywords: Sequence[str]) -> Matcher:
    return _compile(tuple(keywords))
