"""Scenario: Rita the researcher types into the issue list's search box, and `lib.websearch`
reads what she typed the way PostgreSQL's `websearch_to_tsquery` does: words side by side all
matter, "or" offers either side, quotes make a phrase, a "-" excludes. The readings below are
written by hand from PostgreSQL's documentation of that syntax."""

from __future__ import annotations

import pytest

from lib.websearch import Term, WebSearch, parse, to_q

W, P = Term, lambda text, negated=False: Term(text, negated=negated, phrase=True)


@pytest.mark.parametrize(
    ("typed", "alternatives"),
    [
        ("quantization", [[W("quantization")]]),
        ("quantization -zebra", [[W("quantization"), W("zebra", negated=True)]]),
        ('"expert parallel"', [[P("expert parallel")]]),
        ('  "expert   parallel"  hangs', [[P("expert parallel"), W("hangs")]]),
        ("checkpoint OR deadlock", [[W("checkpoint")], [W("deadlock")]]),
        ("a b or c", [[W("a"), W("b")], [W("c")]]),
        ('-"lorem ipsum" dolor', [[P("lorem ipsum", negated=True), W("dolor")]]),
        ('"unclosed phrase', [[P("unclosed phrase")]]),
        ("or cat or or dog or", [[W("cat")], [W("dog")]]),  # a dangling "or" joins nothing
        ("all-reduce", [[W("all-reduce")]]),  # a hyphen inside a word is the word's
        ('-  "" -', []),  # a lone "-" and an empty phrase name nothing
        ("", []),
    ],
)
def test_what_she_types_reads_as_alternatives_of_terms(typed, alternatives):
    assert parse(typed) == WebSearch(tuple(tuple(terms) for terms in alternatives))


def test_words_counts_a_phrases_words_each():
    assert parse('"expert parallel deadlock" -zebra or nccl').words == 5


@pytest.mark.parametrize(
    ("typed", "only_excludes"),
    [
        ("-lorem", True),
        ('-"lorem ipsum" -dolor', True),
        ("memory or -lorem", True),  # the second side would match nearly everything
        ("memory -lorem", False),
        ("memory -lorem or -ipsum cuda", False),
        ("", False),
    ],
)
def test_a_search_of_excluded_words_only_is_told_apart(typed, only_excludes):
    assert parse(typed).only_excludes is only_excludes


def test_written_out_again_it_reads_the_same():
    typed = '  Expert  "all   reduce"  -zebra OR -"int4 weights" cuda or'
    written = parse(typed).websearch_text()
    assert written == 'Expert "all reduce" -zebra or -"int4 weights" cuda'
    assert parse(written) == parse(typed)


def test_nothing_to_look_for_finds_nothing_never_everything():
    # (What the condition finds, term by term, is tested on rows: tests/labeling/
    # test_issue_list.py, test_without_full_text_search_the_same_syntax_finds_substrings.)
    assert str(to_q(parse(""), ["title"])) == "(AND: ('pk__in', []))"
    assert str(to_q(parse("zebra"), ["title"])) == "(AND: ('title__icontains', 'zebra'))"
