"""The one CSV read loop: every record with its line, a bad one reported where it is and reading
going on after it, and how far reading got when the file itself fails."""

import io

import pytest

from lib import csvread


def test_records_come_with_their_line_and_a_bad_one_does_not_stop_the_reading():
    text = 'a,b\n"two\nlines",c\n' + "x," + "y" * 140_000 + "\nlast,row\n"
    got = list(csvread.records(io.StringIO(text, newline="")))
    assert [(line, cells) for line, cells, _ in got] == [
        (1, ["a", "b"]),
        (3, ["two\nlines", "c"]),  # a record spanning lines is named by its last one
        (4, None),
        (5, ["last", "row"]),
    ]
    assert [why is None for _, _, why in got] == [True, True, False, True]
    assert "a cell is over 131,072 characters" in (got[2][2] or "")


def test_a_file_that_fails_to_decode_raises_and_line_num_says_how_far_reading_got():
    def lines():
        yield "a,b\r\n"
        yield "c,d\r\n"
        raise UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid continuation byte")

    rows = csvread.records(lines())
    assert next(rows)[:2] == (1, ["a", "b"])
    assert next(rows)[:2] == (2, ["c", "d"])
    with pytest.raises(UnicodeDecodeError):
        next(rows)
    assert rows.line_num == 2
