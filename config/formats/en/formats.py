"""English date formats: ISO-like, as the pages showed them before translation.

Researchers read and compare dates across repositories; "2024-08-01 14:05" is unambiguous where
Django's default English ("08/01/2024 2:05 p.m.") is not. Other languages keep Django's own
formats (zh-Hans: 2024年8月1日)."""

DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
TIME_FORMAT = "H:i"
