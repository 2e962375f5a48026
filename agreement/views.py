"""The agreement report page (leads, admins and researchers, as the API), the label audit
(leads and admins) and the policy simulator (leads). Table I's page is `dataset.table_one_views`
(its estimated columns come from `raters`)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext

from agreement.audit import ACCURACY_DEFINITION, audit
from agreement.forms import (
    DEFAULT_AUDIT_ROWS,
    MAX_AUDIT_ROWS,
    AuditForm,
    SimulatorForm,
)
from agreement.permissions import AGREEMENT_ROLES, AUDIT_ROLES
from agreement.report_page import report_page
from agreement.simulation import cached_tradeoff, chart, machine_tradeoff
from annotator.models import LEAD_ROLES
from annotator.permissions import membership_or_404
from labeling import taxonomy_history as history
from lib.inputlimits import row_id
from lib.refusal import Refusal, add_to_form
from lib.requests import AuthedRequest


@login_required
def agreement_report_page(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=AGREEMENT_ROLES)
    project = membership.project
    # Any version of the project's own history (not another project's edits): labels are read
    # under it through the lineage.
    versions = history.project_versions(project).order_by("number")
    version = project.taxonomy_version
    if request.GET.get("version", "").isdigit():
        version = get_object_or_404(versions, pk=row_id(request.GET["version"]))
    # The Dawid-Skene accuracy column is for leads and admins only (AUDIT_ROLES): researchers
    # read the report too, but the model's estimate of a person is the leads' working figure.
    context = report_page(project, version, with_model_accuracy=membership.role in AUDIT_ROLES)
    context.update(project=project, versions=versions, version=version)
    return render(request, "agreement/report.html", context)


@login_required
def label_audit_page(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=AUDIT_ROLES)
    project = membership.project
    form = AuditForm(request.GET)
    context: dict[str, object] = {"project": project, "form": form, "max_rows": MAX_AUDIT_ROWS}
    if not form.is_valid():
        context.update(rows=DEFAULT_AUDIT_ROWS, result=None)
        return render(request, "agreement/audit.html", context, status=400)
    rows = form.rows()
    context.update(
        rows=rows,
        result=audit(project, top=rows),
        accuracy_definition=gettext(ACCURACY_DEFINITION),
    )
    return render(request, "agreement/audit.html", context)


@login_required
def policy_simulator_page(request: AuthedRequest, project_id: int) -> HttpResponse:
    """The adaptive rule's trade-off on the project's own labels: the form, and on POST the
    chart and table (`agreement.simulation.cached_tradeoff`, as the command's `simulate`)."""
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    project = membership.project
    form = SimulatorForm(request.POST or None, project=project)
    context: dict = {"project": project, "form": form, "result": None, "machine": None}
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                result = cached_tradeoff(
                    project,
                    min_labels=data["min_labels"],
                    leads=tuple(data["leads"]),
                    orders=data["orders"],
                    seed=data["seed"],
                )
                if data["machine_rater"]:
                    context["machine"] = machine_tradeoff(
                        project,
                        data["machine_rater"],
                        data["confidence"],
                        min_labels=data["min_labels"],
                        leads=data["leads"],
                        orders=data["orders"],
                        seed=data["seed"],
                    )
            except Refusal as error:
                # e.g. a minimum above the project's panel: the error names the field (the
                # command's option where it differs from the form's field).
                add_to_form(form, error, {"min": "min_labels", "machine-rater": "machine_rater"})
                status = 400
            else:
                context["result"] = result
                context["chart"] = chart(result) if result["issues"] else None
        else:
            status = 400
    if request.htmx and status == 400:
        # htmx swaps no 4xx answer: the fragment with the errors beside the fields comes as 200.
        status = 200
    template = "agreement/_simulation.html" if request.htmx else "agreement/simulate.html"
    return render(request, template, context, status=status)
