"""Template context every page needs: which top-level pages the user may open."""

from annotator.models import LEAD_ROLES, Membership


def navigation(request) -> dict:
    user = request.user
    if not user.is_authenticated:
        return {}
    # Same rule as the repositories page itself: staff, or a lead of any project.
    manages_ingest = (
        user.is_staff or Membership.objects.filter(user=user, role__in=LEAD_ROLES).exists()
    )
    return {"nav_manages_ingest": manages_ingest}
