"""Dates people read: ISO-like in English (config/formats/en), Django's own in Chinese."""

import datetime

from django.template import Context, Template
from django.utils import translation

PAGE = Template('{{ when|date:"SHORT_DATETIME_FORMAT" }} | {{ when|date:"DATE_FORMAT" }}')
WHEN = datetime.datetime(2024, 8, 1, 14, 5)


def test_an_english_reader_sees_iso_dates_not_month_first():
    with translation.override("en"):
        shown = PAGE.render(Context({"when": WHEN}))
    assert shown == "2024-08-01 14:05 | 2024-08-01"


def test_a_chinese_reader_sees_year_month_day_in_characters():
    with translation.override("zh-hans"):
        shown = PAGE.render(Context({"when": WHEN}))
    assert shown == "2024年8月1日 14:05 | 2024年8月1日"
