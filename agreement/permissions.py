"""Who may read a project's agreement figures."""

from __future__ import annotations

from annotator.models import LEAD_ROLES, Role

# The agreement report and its API: pseudonymous figures for the people who run or study the
# project; not for annotators, who are blind to each other's labels.
AGREEMENT_ROLES = (Role.LEAD, Role.ADMIN, Role.RESEARCHER)
# Table I counts final issues only, which every member may see.
TABLE_ONE_ROLES = (Role.LEAD, Role.RESEARCHER, Role.ANNOTATOR, Role.ADMIN)
# The label audit (Dawid-Skene estimates of each annotator and each final label): the people
# who decide final labels. Never annotators; researchers read the agreement figures only.
AUDIT_ROLES = LEAD_ROLES
