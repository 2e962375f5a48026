from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgreementConfig(AppConfig):
    name = "agreement"
    verbose_name = _("Agreement")

    def ready(self) -> None:
        from agreement.permissions import AGREEMENT_ROLES, AUDIT_ROLES, TABLE_ONE_ROLES
        from annotator.links import ANALYSE, RESOLVE, ProjectLink, register
        from annotator.models import LEAD_ROLES

        register(
            ProjectLink(_("Agreement"), "agreement_report", AGREEMENT_ROLES, 50, group=ANALYSE),
            ProjectLink(_("Label audit"), "label_audit", AUDIT_ROLES, 55, group=RESOLVE),
            ProjectLink(_("Table I"), "table_one", TABLE_ONE_ROLES, 80, group=ANALYSE),
            ProjectLink(_("Policy simulator"), "policy_simulator", LEAD_ROLES, 55, group=ANALYSE),
        )
