"""Scenario: a run failed while nobody watched; Lena reads its error in Chinese, Ada in English.

`lib.stored_messages` keeps what the code said (msgid and parameters), not the words of the
language the job ran in; text stored before, or words the code did not write, stay as stored.
"""

from __future__ import annotations

from django.utils import translation
from django.utils.translation import gettext_noop

from lib import stored_messages

# A message of the catalogue (raters.runs), with its Chinese written here, not read from it.
FAILED = gettext_noop("storing labels failed: %(error)s")


def test_a_stored_message_reads_in_each_readers_language():
    with translation.override("zh-hans"):
        stored = stored_messages.dump(FAILED, error="disk full")  # made under Chinese
    with translation.override("en"):
        assert stored_messages.shown(stored) == "storing labels failed: disk full"
    with translation.override("zh-hans"):
        assert stored_messages.shown(stored) == "保存标注失败：disk full"  # noqa: RUF001


def test_plain_text_and_what_only_looks_like_a_message_are_shown_as_stored():
    assert stored_messages.shown("llm: 401, the key was refused") == (
        "llm: 401, the key was refused"
    )
    assert stored_messages.shown("") == ""
    broken = '{"msgid": "storing labels failed: %(error)s", "params": {}}'  # no parameter
    assert stored_messages.shown(broken) == broken
    cut = stored_messages.dump(FAILED, error="x")[:30]
    assert stored_messages.shown(cut) == cut
