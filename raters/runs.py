"""Adding a machine rater, running it over a project's issues, and retraining it.

`add_rater`, `run_rater` and `retrain_due` are what the pages, the API, the commands
and the Celery tasks (`raters.tasks`) call (enlisting: `raters.enlisting`). A run reads the
issues' texts and the project's final labels
(theme-level codes, `raters.backends.theme_code`), asks the rater's backend for labels and
stores them as `MachineLabel` rows, marking the rater's earlier labels of those issues not
current. A run that stopped (a worker restart: the task is delivered again; a failed run, or
one left `running` by a killed command, resumed with `machine_label --resume`) goes on from the
issues it has not labeled yet: each issue gets one label per run. A run is claimed by the
process that runs it (`lib.jobs.Job.claim`, one conditional UPDATE) and stays its own while
that process lives (`raters.liveness`): a run still running elsewhere is never run twice at
once. The tokens an endpoint counted are summed on the run. Nothing here touches an
annotation, a reservation or an issue's status: machine labels never count toward K and never
change what an annotator is served. An llm rater's model is checked against what its endpoint
lists when it is added.
A run that trained a rater sends `rater_trained` with the rater at its new version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.db import DatabaseError, transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.dispatch import Signal
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from annotator import outbox
from annotator.models import Project
from ingest.hosts import MODEL_API_HOSTS, base_url_refused
from ingest.models import Comment, Issue
from labeling.models import MachineLabel, MachineRater, ProjectIssue, Resolution
from lib import jobclaim, stored_messages
from lib.refusal import Refusal
from raters.alt_test import retest_enlisted
from raters.backends import (
    FP_CODE,
    RUN_FIELDS,
    BackendError,
    IssueText,
    KeyRefused,
    LabelRequest,
    NodeText,
    Prediction,
    backend_for,
    theme_code,
)
from raters.models import RaterRun
from taxonomy.lineage import Translator
from taxonomy.models import TaxonomyNode

# The text a rater reads: title, body and the first comments, cut at a length.
FIRST_COMMENTS = 3
MAX_TEXT = 20_000
STORE_CHUNK = 2000

# Sent with `rater` (its new `version`) after a run trained a rater: apps above this one act on
# a new version without this app importing them (`dataset.signals` queues the recall ranking).
rater_trained = Signal()


@dataclass
class RaterSettings:
    """What `add_rater` takes (validated by the form and the command alike)."""

    name: str
    kind: str
    model: str = ""
    api_url: str = ""
    api_key_env: str = ""
    temperature: float = 0.0
    samples: int = 1
    prompt_details: bool = False


def add_rater(
    project: Project,
    settings: RaterSettings,
    user: User | None = None,
    warn: Callable[[str], None] | None = None,
) -> MachineRater:
    """Validate and store a rater. An llm rater's model is checked against what its endpoint
    lists (`GET /models`): a model it does not list is refused, naming the ones it does (a
    server may answer any model name with the one it has loaded); an endpoint that lists none,
    or cannot be asked now, is said through `warn` and the rater is added all the same."""
    if not settings.name.strip():
        raise Refusal("name", gettext("a rater needs a name"))
    if settings.kind not in MachineRater.Kind.values:
        raise Refusal(
            "kind", gettext("one of %(values)s") % {"values": ", ".join(MachineRater.Kind.values)}
        )
    if MachineRater.objects.filter(project=project, name=settings.name.strip()).exists():
        raise Refusal(
            "name",
            gettext("this project already has a rater named %(name)s")
            % {"name": repr(settings.name)},
        )
    if settings.kind == MachineRater.Kind.LLM:
        if not (settings.model and settings.api_url):
            raise Refusal("model", gettext("an llm rater needs --model and --api-url"))
        why = model_url_refused(settings.api_url)
        if why:
            raise Refusal("api_url", why)
    why = key_variable_refused(settings.api_key_env)
    if why:
        raise Refusal("api_key_env", why)
    if not 0 <= settings.temperature <= 2:
        raise Refusal("temperature", gettext("between 0 and 2"))
    if not 1 <= settings.samples <= 20:
        raise Refusal("samples", gettext("between 1 and 20"))
    model = settings.model
    if settings.kind == MachineRater.Kind.CLASSIFIER and not model:
        model = "tfidf-logreg"
    if settings.kind == MachineRater.Kind.LLM:
        check_model(settings, warn or (lambda text: None))
    return MachineRater.objects.create(
        project=project,
        name=settings.name.strip(),
        kind=settings.kind,
        model=model,
        api_url=settings.api_url,
        api_key_env=settings.api_key_env,
        temperature=settings.temperature,
        samples=settings.samples,
        prompt_details=settings.prompt_details,
        created_by=user,
    )


def check_model(settings: RaterSettings, warn: Callable[[str], None]) -> None:
    """Refusal("model") when the endpoint lists its models and the rater's is not one of
    them; Refusal("api_key_env") when it refuses the key; else a warning when it could not
    be checked (`raters.llm.LLMBackend.listed_models`)."""
    candidate = MachineRater(
        kind=MachineRater.Kind.LLM,
        model=settings.model,
        api_url=settings.api_url,
        api_key_env=settings.api_key_env,
    )
    try:
        backend: Any = backend_for(candidate)
        listed, why = backend.listed_models(check=True)
    except BackendError as exc:
        if isinstance(exc, KeyRefused):
            raise Refusal(
                "api_key_env",
                gettext("the endpoint refused the key from %(variable)s: %(why)s")
                % {"variable": settings.api_key_env or "-", "why": str(exc)},
            ) from None
        listed, why = None, str(exc)
    if listed is None:
        warn(
            gettext(
                "The model %(model)s was not checked: the endpoint did not list its models "
                "(%(why)s). A run checks it again before it asks for labels."
            )
            % {"model": settings.model, "why": why}
        )
        return
    if not model_listed(settings.model, listed):
        raise Refusal(
            "model",
            gettext(
                "the endpoint does not serve %(model)s: it lists %(listed)s (a server may "
                "answer any model name with the one it has loaded)"
            )
            % {"model": settings.model, "listed": ", ".join(listed) or gettext("no model")},
        )


def model_listed(model: str, listed: Iterable[str]) -> bool:
    """The model is among those listed (Ollama lists "name:latest" for "name")."""
    return any(model in (name, name.removesuffix(":latest")) for name in listed)


def key_variable_refused(name: str) -> str:
    """Why a rater may not read its key from the environment variable `name` ("" if it may,
    or if it names none): only the names an admin lists in MODEL_API_KEY_VARS, read at every
    call. The form, `add_rater` (page and command) and the llm backend, before it reads the
    key, all ask here; the message is the same whatever the variable, so it says nothing of
    which variables exist on the server."""
    if not name:
        return ""
    if name in django_settings.MODEL_API_KEY_VARS:
        return ""
    return str(KEY_VARIABLE_REFUSED)


KEY_VARIABLE_REFUSED = _(
    "not a key variable the admin allows (MODEL_API_KEY_VARS lists the names a rater may use)"
)


def model_url_refused(url: str) -> str:
    """Why an llm rater's endpoint URL, or a request the client makes to it, is refused (""
    if it may be used): the forge API URLs' rule (`ingest.hosts.base_url_refused`: the host
    rule, no query or fragment) with the MODEL_API_HOSTS allowlist. Requests are held to the
    base URL's rule too: the chat-completions and models calls carry no query."""
    why = base_url_refused(url, setting=MODEL_API_HOSTS)
    return f"{url}: {why}" if why else ""


def issue_texts(issue_ids: Iterable[int]) -> dict[int, str]:
    """Title, body and the first `FIRST_COMMENTS` comments of each issue, as one text."""
    ids = list(issue_ids)
    texts = {
        pk: f"{title}\n{body}"
        for pk, title, body in Issue.objects.filter(pk__in=ids).values_list("pk", "title", "body")
    }
    first = (
        Comment.objects.filter(issue_id__in=ids)
        .annotate(
            n=Window(RowNumber(), partition_by=[F("issue_id")], order_by=[F("created_at"), F("id")])
        )
        .filter(n__lte=FIRST_COMMENTS)
        .values_list("issue_id", "body")
    )
    for issue_id, body in first:
        texts[issue_id] += f"\n{body}"
    return {pk: text[:MAX_TEXT] for pk, text in texts.items()}


def final_codes(project: Project) -> dict[int, str]:
    """Each final issue's label at theme level ("FP", a theme, or a type without a theme),
    read under the project's taxonomy version: the finals a classifier trains on (a final with
    no code is left out). `run_rater` records their count as `trained_on` and `raters_due`
    counts them the same way, so a final without a code never makes a rater due."""
    translator = Translator(project.taxonomy_version)
    rows = Resolution.objects.filter(project=project, is_current=True).select_related(
        "issue_type", "theme", "sub_theme"
    )
    out = {}
    for row in rows:
        code = theme_code(translator.label(row).code)
        if code:
            out[row.issue_id] = code
    return out


def scope_issue_ids(project: Project, only: str) -> list[int]:
    items = ProjectIssue.objects.filter(project=project)
    if only == RaterRun.Scope.FINAL:
        items = items.filter(status=ProjectIssue.Status.FINAL)
    elif only == RaterRun.Scope.OPEN:
        items = items.exclude(status=ProjectIssue.Status.FINAL)
    return list(items.order_by("position").values_list("issue_id", flat=True))


def _label_fields(code: str | None, nodes: dict[str, TaxonomyNode]) -> dict | None:
    """The label fields of a code the taxonomy knows; None for an unreadable one."""
    if code == FP_CODE:
        return {"is_false_positive": True}
    if not code or code not in nodes:
        return None
    parts = code.split(".")
    levels = [nodes.get(".".join(parts[: i + 1])) for i in range(len(parts))]
    if any(node is None for node in levels):
        return None
    return {
        "issue_type": levels[0],
        "theme": levels[1] if len(levels) > 1 else None,
        "sub_theme": levels[2] if len(levels) > 2 else None,
    }


def _store(run: RaterRun, predictions: list[Prediction], nodes: dict[str, TaxonomyNode]) -> None:
    """Write a chunk of labels as the rater's current ones, and add their tokens to the run."""
    rows = []
    now = timezone.now()
    for p in predictions:
        fields = _label_fields(p.code, nodes)
        rows.append(
            MachineLabel(
                rater_id=run.rater_id,
                issue_id=p.issue_id,
                run=run,
                valid=fields is not None,
                raw_output=p.raw_output[:100_000],
                model=p.model,
                model_version=p.model_version,
                prompt_hash=p.prompt_hash,
                parameters=p.parameters,
                confidence=p.confidence,
                fold=p.fold,
                created_at=now,
                **(fields or {}),
            )
        )
    with transaction.atomic():
        MachineLabel.objects.filter(
            rater_id=run.rater_id, issue_id__in=[p.issue_id for p in predictions], is_current=True
        ).update(is_current=False)
        MachineLabel.objects.bulk_create(rows)
        RaterRun.objects.filter(pk=run.pk).update(
            prompt_tokens=F("prompt_tokens") + sum(p.prompt_tokens for p in predictions),
            completion_tokens=F("completion_tokens")
            + sum(p.completion_tokens for p in predictions),
        )


def taxonomy_texts(nodes: Iterable[TaxonomyNode]) -> list[NodeText]:
    """The taxonomy as a prompt shows it, in the taxonomy's order (type, its themes, …)."""
    return [
        NodeText(n.code, n.name, n.description, tuple(str(d) for d in n.details or ()))
        for n in sorted(nodes, key=lambda n: (n.code.split("."), n.position))
    ]


def _progress(run: RaterRun, done: int) -> None:
    # No heartbeat here: `lib.jobs.Heartbeat` writes it while the run runs. Only while the run
    # is this worker's (`Job.while_mine`): one taken over leaves it to the worker that took it.
    run.while_mine().update(done=done)
    jobclaim.step_pause()  # 0 but in tests/faults/test_worker_kill.py


def _record(run_id: int, fields: dict[str, Any]) -> None:
    """What a backend found out about its endpoint, on the run (`RUN_FIELDS` only)."""
    known = {k: v for k, v in fields.items() if k in RUN_FIELDS}
    if known:
        RaterRun.objects.filter(pk=run_id).update(**known)


def create_run(
    rater: MachineRater, only: str = RaterRun.Scope.ALL, user: User | None = None
) -> RaterRun:
    if rater.kind == MachineRater.Kind.EXTERNAL:
        raise Refusal(
            "rater", gettext("an external rater's labels are imported from a file, never run")
        )
    if only not in RaterRun.Scope.values:
        raise Refusal(
            "only", gettext("one of %(values)s") % {"values": ", ".join(RaterRun.Scope.values)}
        )
    return RaterRun.objects.create(rater=rater, only=only, requested_by=user)


def _offset_progress(run: RaterRun, offset: int, done: int) -> None:
    _progress(run, offset + done)


def _invalid(run: RaterRun) -> int:
    return MachineLabel.objects.filter(run=run, valid=False).count()


def run_rater(run_id: int) -> RaterRun:
    """Run a rater over its run's scope and store the labels (safe to run twice: a finished
    run, or one another live process runs, is left alone; a run that stopped goes on from the
    issues it has not labeled). Run by the delivery that claims it (`lib.jobs.Job.run_claimed`:
    a failed or stale run is resumed); one another live process runs is returned as it is."""
    run = RaterRun.objects.select_related("rater__project__taxonomy_version").get(pk=run_id)
    try:
        return run.run_claimed(_run)
    except jobclaim.Busy:
        run.refresh_from_db()
        return run


def _run(run: RaterRun) -> RaterRun:
    rater = run.rater
    project = rater.project
    ids = scope_issue_ids(project, run.only)
    labeled = set(MachineLabel.objects.filter(run=run).values_list("issue_id", flat=True))
    todo = [i for i in ids if i not in labeled]
    finals = final_codes(project)
    RaterRun.objects.filter(pk=run.pk).update(total=len(ids), done=len(ids) - len(todo), error="")
    nodes = {n.code: n for n in TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id)}
    chunk: list[Prediction] = []
    try:
        backend = backend_for(rater)
        reads_finals = getattr(backend, "reads_finals", backend.trains)
        store_every = getattr(backend, "store_every", STORE_CHUNK)
        texts = issue_texts(set(todo) | (set(finals) if backend.trains else set()))
        request = LabelRequest(
            project_id=project.pk,
            items=[IssueText(i, "", texts.get(i, "")) for i in todo],
            finals=finals if reads_finals else {},
            final_texts={i: texts[i] for i in finals if i in texts} if backend.trains else {},
            codes={code: node.name for code, node in nodes.items()},
            progress=partial(_offset_progress, run, len(ids) - len(todo)),
            taxonomy=taxonomy_texts(nodes.values()),
            taxonomy_version=project.taxonomy_version_id,
            guideline=project.guideline,
            fetch_texts=lambda wanted: issue_texts(i for i in wanted if i in finals),
            record=partial(_record, run.pk),
        )
        for prediction in backend.label(request):
            chunk.append(prediction)
            if len(chunk) >= store_every:
                _store(run, chunk, nodes)
                chunk = []
        if chunk:
            _store(run, chunk, nodes)
    except (BackendError, DatabaseError) as exc:
        # A store that fails (e.g. `one_current_machine_label` against a run that overlapped)
        # ends the run failed, never left RUNNING; its labels stored so far stay.
        # A backend's error is stored to be read in each reader's language when it can be.
        error = (
            exc.stored()
            if isinstance(exc, BackendError)
            else stored_messages.dump(
                gettext_noop("storing labels failed: %(error)s"), error=str(exc)
            )
        )
        if chunk and isinstance(exc, BackendError):
            try:
                _store(run, chunk, nodes)
            except DatabaseError as store_exc:
                error = stored_messages.dump(
                    gettext_noop("%(error)s; storing the last labels failed: %(store_error)s"),
                    error=str(exc),
                    store_error=str(store_exc),
                )
        run.end(
            RaterRun.Status.FAILED,
            # Cut to length as read (a cut stored message would no longer be one).
            error=error if len(error) <= 10_000 else stored_messages.shown(error)[:10_000],
            invalid=_invalid(run),
            done=MachineLabel.objects.filter(run=run).count(),
        )
        run.refresh_from_db()
        return run

    def trained() -> None:
        # Only by the worker that still owns the run (`Job.end`): a run taken over meanwhile
        # leaves the rater's new version to the worker that took it over.
        MachineRater.objects.filter(pk=rater.pk).update(
            trained_on=len(finals), trained_at=timezone.now(), version=F("version") + 1
        )

    ended = run.end(
        RaterRun.Status.DONE,
        publish=trained if backend.trains else None,
        done=len(ids),
        invalid=_invalid(run),
    )
    if ended and backend.trains:
        # A new version counts only once it passes the alternative annotator test itself.
        retest_enlisted(rater.pk)
        rater.refresh_from_db(fields=["version", "trained_on", "trained_at"])
        # After the run is done: what listens (the recall ranking) never holds a run back.
        rater_trained.send(sender=MachineRater, rater=rater)
    run.refresh_from_db()
    return run


def unfinished_run(rater: MachineRater) -> RaterRun | None:
    """The rater's latest run, if it did not finish (queued, running, stopped or failed): an
    older unfinished run was replaced by it and is not resumed (`RaterRun.runs_again`)."""
    latest = rater.runs.order_by("-created_at", "-pk").first()
    return None if latest is None or latest.status == RaterRun.Status.DONE else latest


def resumable_run(rater: MachineRater) -> RaterRun:
    """The run `machine_label --resume` goes on with: the latest unfinished one, unless a
    live process still runs it (Refusal naming `resume`). A run left `running` by a killed
    command or worker is stale (`raters.liveness`) and resumable."""
    run = unfinished_run(rater)
    if run is None:
        raise Refusal("resume", gettext("%(rater)s has no unfinished run") % {"rater": rater.name})
    if run.status == RaterRun.Status.RUNNING and not run.stale:
        raise Refusal(
            "resume",
            gettext(
                "run %(run)s of %(rater)s is running (process %(worker)s, last heard of "
                "%(when)s): wait for it; it can be resumed once that process has stopped"
            )
            % {
                "run": run.pk,
                "rater": rater.name,
                "worker": run.worker or "?",
                "when": run.heartbeat_at.isoformat(timespec="seconds") if run.heartbeat_at else "-",
            },
        )
    return run


# A run's error, stored (English, as every run error; shown as stored).
STOPPED = (
    "stopped without finishing: its process (%(worker)s) ended; the labels it stored are kept "
    "and machine_label --resume goes on with it"
)


class RaterBusy(Refusal):
    """A run of the rater is already queued or running."""


def begin_run(
    rater: MachineRater, only: str = RaterRun.Scope.ALL, user: User | None = None
) -> RaterRun:
    """Record a new run of the rater, or RaterBusy when one is already queued or running: runs
    of one rater never overlap (two would both write current labels, and the second would hit
    `one_current_machine_label`). The rater's row is locked while this decides, so two
    callers at once (two close final labels, a lead's click beside a retraining) start one run
    between them. The page, the command and the retraining task all start runs here."""
    with transaction.atomic():
        MachineRater.objects.select_for_update().filter(pk=rater.pk).first()
        busy = unfinished_run(rater)
        if busy is not None and busy.stale:
            # Left `running` by a process that stopped: it ends failed (its labels kept, and
            # resumable), and does not hold the rater; unless a delivery of its task took it
            # over since it was read (the UPDATE names what was read, as `Job.claim`'s does).
            stopped = RaterRun.objects.filter(
                pk=busy.pk, status=busy.status, worker=busy.worker, heartbeat_at=busy.heartbeat_at
            ).update(
                status=RaterRun.Status.FAILED,
                error=STOPPED % {"worker": busy.worker or "?"},
                finished_at=timezone.now(),
            )
            busy = None if stopped else RaterRun.objects.get(pk=busy.pk)
        if busy is not None and busy.status in (RaterRun.Status.PENDING, RaterRun.Status.RUNNING):
            raise RaterBusy(
                "rater",
                gettext("run %(run)s of %(rater)s is %(status)s: wait for it")
                % {"run": busy.pk, "rater": rater.name, "status": busy.get_status_display()},
            )
        return create_run(rater, only, user)


def raters_due(project_id: int) -> list[MachineRater]:
    """Trained classifier raters of the project with at least `retrain_after` new final labels
    since their last training."""
    raters = list(
        MachineRater.objects.filter(
            project_id=project_id, kind=MachineRater.Kind.CLASSIFIER, version__gt=0
        )
    )
    if not raters:
        return []
    finals = len(final_codes(Project.objects.select_related("taxonomy_version").get(pk=project_id)))
    return [rater for rater in raters if finals - rater.trained_on >= rater.retrain_after]


# -- asking for a run --------------------------------------------------------------------------

# The tasks, by their Celery names (a run's is `RaterRun.TASK`): raters.tasks calls this module,
# never the reverse, so a page that asks for a run imports no Celery (annotator.outbox).
RETRAIN_TASK = "raters.tasks.retrain_due"


def start_run(
    rater: MachineRater, only: str = RaterRun.Scope.ALL, user: User | None = None
) -> RaterRun:
    """Record a run (Refusal naming the field; RaterBusy while one of the rater's runs is
    queued or running) and queue it once the transaction commits."""
    with transaction.atomic():
        run = begin_run(rater, only, user)
        outbox.enqueue(run.TASK, run.task_args())
    return run


def resume_run(run: RaterRun) -> RaterRun:
    """Queue a run that stopped again (it goes on from the issues not labeled yet)."""
    outbox.enqueue(run.TASK, run.task_args())
    return run
