"""Who may see and run a project's machine raters.

Machine labels are never for annotators (they would anchor their labels): the validation page
and the API are for leads, admins and researchers; adding and running a rater is for leads.
"""

from __future__ import annotations

from annotator.models import LEAD_ROLES, Role

VALIDATION_ROLES = (Role.LEAD, Role.ADMIN, Role.RESEARCHER)
RUN_ROLES = LEAD_ROLES
