"""Who may do what in the labeling workflow (the project gate itself is
`annotator.permissions.membership_or_404`)."""

from __future__ import annotations

from annotator.models import Role
from ingest.permissions import scope_repositories  # noqa: F401  (the rule lives in ingest)

# Who may label: leads label the pilot and can take part like any volunteer.
LABELER_ROLES = (Role.ANNOTATOR, Role.LEAD, Role.ADMIN)
# Who proposes and votes on taxonomy changes: the people who label (researchers only read).
VOTING_ROLES = (Role.ANNOTATOR, Role.LEAD, Role.ADMIN)
# Who reads the issue list and an issue's labels: it shows label counts, statuses and final
# labels, which annotators must not see (they stay blind until an issue is final).
ISSUE_LIST_ROLES = (Role.LEAD, Role.ADMIN, Role.RESEARCHER)
