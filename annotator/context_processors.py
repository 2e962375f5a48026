"""Template context every page needs: which top-level pages the user may open."""

from django.http import HttpRequest

from annotator.models import LEAD_ROLES, Membership
from lib import sql

# Table names from the models (`Meta.db_table`), never spelled out in the SQL below.
_MEMBERSHIP_TABLE = Membership._meta.db_table

# Every page asks; one prepared statement (see lib.sql).
_LEAD_ROLES_SQL = ", ".join(f"'{role.value}'" for role in LEAD_ROLES)
_LEADS_ANY_SQL = (
    f"SELECT EXISTS (SELECT 1 FROM {_MEMBERSHIP_TABLE}"
    f" WHERE user_id = %(user)s AND role IN ({_LEAD_ROLES_SQL}))"
)


def navigation(request: HttpRequest) -> dict:
    user = request.user
    if not user.is_authenticated:
        return {}
    # Same rule as the repositories page itself: staff, or a lead of any project.
    manages_ingest = user.is_staff or bool(sql.first_row(_LEADS_ANY_SQL, {"user": user.pk})[0])
    return {"nav_manages_ingest": manages_ingest}
