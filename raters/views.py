"""The machine raters page: validation figures (leads, researchers), adding, running (with a
progress display) and enlisting a rater in the stopping rule (leads)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext

from annotator.models import Membership
from annotator.permissions import membership_or_404
from labeling.models import MachineRater
from lib import superseded
from lib.refusal import Refusal, add_to_form
from lib.requests import AuthedRequest
from raters.enlisting import current_validations, enlist, rule_ignores
from raters.forms import AddRaterForm, EnlistForm, ImportLabelsForm, RunForm
from raters.imports import MAX_BYTES, LabelFileError, import_machine_labels
from raters.models import RaterRun
from raters.permissions import RUN_ROLES, VALIDATION_ROLES
from raters.runs import add_rater, start_run
from raters.validation import validation_report


def _page(
    request: HttpRequest,
    membership: Membership,
    form: AddRaterForm | None = None,
    status: int = 200,
    import_form: ImportLabelsForm | None = None,
    import_problems: list[str] | None = None,
) -> HttpResponse:
    project = membership.project
    report = validation_report(project)
    raters = {r.name: r for r in MachineRater.objects.filter(project=project)}
    may_run = membership.role in RUN_ROLES
    # Beside the enlist checkbox: the validation of the rater's current version (none: refused).
    current = current_validations(project) if may_run else {}
    rows = [
        {**row, "rater": raters[row["name"]], "current": current.get(raters[row["name"]].pk)}
        for row in report["raters"]
    ]
    return render(
        request,
        "raters/raters.html",
        {
            "project": project,
            "report": report,
            "rows": rows,
            "may_run": may_run,
            "rule_ignores_enlisting": rule_ignores(project),
            "form": form or AddRaterForm(initial={"kind": MachineRater.Kind.CLASSIFIER}),
            "run_form": RunForm(),
            "import_form": import_form or ImportLabelsForm(prefix="import"),
            "import_problems": import_problems or [],
            # A failed run followed by a done run of the same rater is marked as older.
            "runs": superseded.mark(
                RaterRun.objects.filter(rater__project=project).select_related("rater")[:10],
                key=lambda run: run.rater_id,
                failed=RaterRun.Status.FAILED,
                done=RaterRun.Status.DONE,
            )
            if may_run
            else [],
        },
        status=status,
    )


@login_required
def raters_page(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=VALIDATION_ROLES)
    return _page(request, membership)


@login_required
def rater_add(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=RUN_ROLES)
    if request.method != "POST":
        return redirect("raters_page", project_id=project_id)
    form = AddRaterForm(request.POST)
    if form.is_valid():
        try:
            rater = add_rater(
                membership.project,
                form.settings(),
                request.user,
                warn=lambda text: messages.warning(request, text),
            )
        except Refusal as exc:
            add_to_form(form, exc)
        else:
            messages.success(request, gettext("Rater %(name)s added.") % {"name": rater.name})
            return redirect("raters_page", project_id=project_id)
    return _page(request, membership, form, status=400)


@login_required
def rater_run(request: AuthedRequest, project_id: int, rater_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=RUN_ROLES)
    rater = get_object_or_404(MachineRater, pk=rater_id, project=membership.project)
    if request.method != "POST":
        return redirect("raters_page", project_id=project_id)
    form = RunForm(request.POST)
    if not form.is_valid():
        return HttpResponse(
            f"only: {'; '.join(str(e) for e in form.errors['only'])}",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    try:
        run = start_run(rater, form.cleaned_data["only"], request.user)
    except Refusal as exc:  # it names the rater: plain text, never markup
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    if request.htmx:
        return render(request, "raters/_run.html", {"project": membership.project, "run": run})
    messages.success(request, gettext("Run of %(name)s queued.") % {"name": rater.name})
    return redirect("raters_page", project_id=project_id)


@login_required
def rater_run_status(request: AuthedRequest, project_id: int, run_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=RUN_ROLES)
    run = get_object_or_404(
        RaterRun.objects.select_related("rater"), pk=run_id, rater__project=membership.project
    )
    return render(request, "raters/_run.html", {"project": membership.project, "run": run})


@login_required
def rater_enlist(request: AuthedRequest, project_id: int, rater_id: int) -> HttpResponse:
    """A lead enlists the rater in the adaptive stopping rule (or takes it back)."""
    membership = membership_or_404(request.user, project_id, roles=RUN_ROLES)
    rater = get_object_or_404(MachineRater, pk=rater_id, project=membership.project)
    if request.method != "POST":
        return redirect("raters_page", project_id=project_id)
    form = EnlistForm(request.POST)
    if form.is_valid():
        try:
            enlist(rater, form.cleaned_data["enlisted"], form.cleaned_data["confidence_threshold"])
        except Refusal as exc:
            add_to_form(form, exc)
        else:
            if rater.enlisted and rule_ignores(membership.project):
                messages.warning(
                    request,
                    gettext(
                        "Rater %(name)s is enlisted, but this project's stopping rule is fixed: "
                        "enlisting has no effect until the rule is adaptive."
                    )
                    % {"name": rater.name},
                )
                return redirect("raters_page", project_id=project_id)
            if rater.enlisted:
                done = gettext("Rater %(name)s is enlisted.")
            else:
                done = gettext("Rater %(name)s is not enlisted.")
            messages.success(request, done % {"name": rater.name})
            return redirect("raters_page", project_id=project_id)
    errors = "; ".join(f"{field}: {' '.join(map(str, e))}" for field, e in form.errors.items())
    return HttpResponse(errors, status=400, content_type="text/plain; charset=utf-8")


@login_required
def rater_import(request: AuthedRequest, project_id: int) -> HttpResponse:
    """A lead uploads machine labels made elsewhere: the file becomes an external rater's
    current labels, or every bad row is listed by line and nothing is stored."""
    membership = membership_or_404(request.user, project_id, roles=RUN_ROLES)
    if request.method != "POST":
        return redirect("raters_page", project_id=project_id)
    form = ImportLabelsForm(request.POST, request.FILES, prefix="import")
    if not form.is_valid():
        return _page(request, membership, status=400, import_form=form)
    upload = form.cleaned_data["file"]
    if upload.size > MAX_BYTES:
        form.add_error("file", gettext("larger than 50 MB"))
        return _page(request, membership, status=400, import_form=form)
    try:
        result = import_machine_labels(
            membership.project,
            form.cleaned_data["rater"],
            upload.name,
            upload.read(),
            model=form.cleaned_data["model"],
            user=request.user,
        )
    except LabelFileError as error:
        return _page(
            request, membership, status=400, import_form=form, import_problems=error.problems
        )
    messages.success(
        request,
        gettext("%(n)s labels imported as version %(version)s of %(name)s.")
        % {"n": result.labels, "version": result.version, "name": result.rater.name},
    )
    return redirect("raters_page", project_id=project_id)
