"""The study import's fast inserts: `lib.sql`'s COPY, with the dataset's threshold.

The COPY itself and the foreign-key revalidation live in `lib.sql`, the one SQL module; here
is only when a load counts as large (`REVALIDATE_FROM`, which a test lowers to take the large
path on a small file).
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from django.db import models

from lib import sql

# Below this many rows, per-row foreign-key checks cost less than dropping and re-adding.
REVALIDATE_FROM = sql.REVALIDATE_FROM

insert_rows = sql.copy_rows


def foreign_keys_validated_at_end(
    model: type[models.Model], rows: int
) -> AbstractContextManager[None]:
    """`lib.sql.foreign_keys_validated_at_end` from this module's `REVALIDATE_FROM`."""
    return sql.foreign_keys_validated_at_end(model, rows, from_rows=REVALIDATE_FROM)


def analyze_if_large(rows: int, *loaded: type[models.Model]) -> None:
    """`lib.sql.analyze` the tables of `loaded` after a load of at least `REVALIDATE_FROM` rows."""
    if rows >= REVALIDATE_FROM:
        sql.analyze(*loaded)
