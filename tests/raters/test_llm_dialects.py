"""Lena the lead points an llm rater at the servers teams really run, each faked over real HTTP
on 127.0.0.1 as ../shared/reference/model-apis.md describes it (tests/raters/fakeopenai.py):

- a llama-cpp-python 0.3.36 server: it refuses `json_schema` with an HTTP 500 (a validation
  error naming `response_format.type`), accepts `json_object` with a `schema`, returns the
  log-probabilities of the distribution before the grammar (-17 per forced token), ignores `n`,
  accepts any model name and echoes it, and lists what it has really loaded on `GET /models`;
- a server that takes plain text only (400 for any `response_format`);
- a server that answers every request with the same 500 (a broken configuration), one in an
  outage that fails differently each time, one whose outage said the same twice, and one that
  refuses some issues' prompts;

and the run finds out once what the endpoint accepts, says a repeated refusal is a
configuration error (not "resume when the endpoint is back"), takes its confidence from what it
can trust and says which, checks the model against `GET /models`, and can be resumed when the
command running it was killed.
"""

from __future__ import annotations

import csv
import io
import math
import os
import socket
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from dataset.exports import write_machine_labels_csv
from labeling.models import MachineLabel, MachineRater
from lib import jobclaim
from lib.refusal import Refusal
from raters import liveness
from raters.describe import describe_raters
from raters.models import RaterRun
from raters.runs import RaterSettings, add_rater, begin_run, create_run, run_rater
from tests.raters.conftest import add_finals
from tests.raters.fakeopenai import FakeOpenAI
from tests.raters.test_llm import KEY, KEY_VARIABLE, _labels, _run

pytestmark = pytest.mark.django_db

LLAMA_MODEL = "models/tiny-q8_0.gguf"


@pytest.fixture
def issues(project, repository):
    """15 final issues (3 of each label) and 5 open ones in Lena's project."""
    return add_finals(project, repository, 15, noise=0.0, open_issues=5)


@pytest.fixture
def serve(settings, monkeypatch):
    """Start a fake server (stopped after the test) and allow its host and the key."""
    started: list[FakeOpenAI] = []
    settings.MODEL_API_KEY_VARS = [KEY_VARIABLE]
    settings.MODEL_API_TIMEOUT = 5
    settings.MODEL_API_MAX_RETRIES = 2
    settings.MODEL_API_CONCURRENCY = 2
    monkeypatch.setattr("raters.llm.RETRY_DELAY", 0.01)
    monkeypatch.setenv(KEY_VARIABLE, KEY)

    def start(fake: FakeOpenAI, answers_for=None) -> FakeOpenAI:
        fake.start()
        started.append(fake)
        settings.MODEL_API_HOSTS = [f.host for f in started]
        if answers_for is not None:
            fake.answers = {issue.title: "C.1" for issue in answers_for}
        return fake

    yield start
    for fake in started:
        fake.stop()


def _add(project, lead, fake, model: str, samples: int = 1, warn=None, **extra) -> MachineRater:
    rater = add_rater(
        project,
        RaterSettings(name=extra.pop("name", "llm"), kind="llm", model=model,
                      api_url=fake.base_url, api_key_env=KEY_VARIABLE, samples=samples),
        lead,
        warn=warn,
    )  # fmt: skip
    MachineRater.objects.filter(pk=rater.pk).update(seed=1, max_tokens=64, **extra)
    rater.refresh_from_db()
    fake.requests.clear()
    return rater


# -- llama-cpp-python -------------------------------------------------------------------------


def test_a_llama_cpp_python_server_is_asked_in_json_object_with_its_schema_and_labels_everything(
    project, lead, issues, serve
):
    fake = serve(FakeOpenAI.llama_cpp_python(LLAMA_MODEL), answers_for=issues)
    rater = _add(project, lead, fake, LLAMA_MODEL, samples=3, temperature=0.7)
    run = _run(rater)

    assert (run.status, run.done, run.invalid, run.error) == ("done", 20, 0, "")
    assert run.output_format == "json_object+schema"
    # Its refusal, recorded: the 500's own words, naming response_format.type.
    assert "response_format.type" in run.endpoint["refused"]["json_schema"]
    assert run.endpoint["refused"]["json_schema"].startswith("500 ")
    forms = fake.formats_asked()
    # Found out once per run: json_schema twice alike (the refusal) and once more to confirm
    # it before settling for less, then json_object with the schema for every sample.
    assert forms[:2] == ["json_schema", "json_schema"]
    assert forms[2:5] == ["json_object+schema"] * 3  # the first issue's three samples
    assert forms[5] == "json_schema"  # once more: the same 500, confirmed
    assert forms[6:] == ["json_object+schema"] * (len(forms) - 6)
    schema = next(r for r in fake.chats() if r.body.get("response_format", {}).get("schema"))
    enum = schema.body["response_format"]["schema"]["properties"]["code"]["enum"]
    assert "C.1" in enum and "FP" in enum
    labels = _labels(rater)
    assert {row.label_code for row in labels.values()} == {"C.1"}
    assert {row.parameters["response_format"] for row in labels.values()} == {"json_object+schema"}
    # n is ignored: three samples are three requests per issue (and the probe's refusals).
    assert len(fake.chats()) == 20 * 3 + 3


def test_on_llama_cpp_python_confidence_comes_from_samples_as_its_logprobs_are_before_the_grammar(
    project, lead, issues, serve
):
    fake = serve(FakeOpenAI.llama_cpp_python(LLAMA_MODEL), answers_for=issues)
    title = issues[0].title
    fake.samples = {title: ["C.1", "C.2", "C.1"]}
    rater = _add(project, lead, fake, LLAMA_MODEL, samples=3, temperature=0.7)
    run = _run(rater, "final")

    assert run.status == "done"
    assert run.confidence_from == "samples"
    assert run.endpoint["confidence_why"] == "logprobs_before_grammar"
    # What the probe saw: a product of -17 per code token (three tokens: "C", ".", "1").
    assert run.endpoint["probe_logprob_confidence"] == pytest.approx(math.exp(-17 * 3))
    labels = _labels(rater)
    assert labels[title].confidence == pytest.approx(2 / 3)
    assert labels[title].parameters["confidence_from"] == "samples"
    assert labels[title].parameters["logprobs_implausible"] is True
    others = [row for t, row in labels.items() if t != title]
    assert {row.confidence for row in others} == {1.0}
    # Never the meaningless 4e-15 of a forced answer.
    assert min(row.confidence for row in labels.values()) > 0.5


def test_with_one_sample_and_logprobs_before_the_grammar_a_label_has_no_confidence_and_says_why(
    client, project, lead, issues, serve
):
    fake = serve(FakeOpenAI.llama_cpp_python(LLAMA_MODEL), answers_for=issues)
    rater = _add(project, lead, fake, LLAMA_MODEL, samples=1)
    run = _run(rater, "open")

    assert (run.status, run.confidence_from) == ("done", "none")
    assert {row.confidence for row in _labels(rater).values()} == {None}
    client.force_login(lead)
    page = client.get(reverse("rater_run_status", args=[project.pk, run.pk])).content.decode()
    assert "<code>json_object+schema</code>" in page
    assert "<code>none</code>" in page
    assert "from before the grammar" in page


def test_the_model_is_checked_against_get_models_since_the_server_echoes_any_name(
    client, project, lead, issues, serve
):
    """llama-cpp-python answers "gpt-4o" with its loaded model and says "gpt-4o" served it."""
    fake = serve(FakeOpenAI.llama_cpp_python(LLAMA_MODEL), answers_for=issues)

    with pytest.raises(Refusal) as refused:
        _add(project, lead, fake, "gpt-4o")
    assert refused.value.field == "model"
    assert "gpt-4o" in refused.value.message and LLAMA_MODEL in refused.value.message
    assert not MachineRater.objects.exists()

    # The page: a 400 beside the model field, the list in the message.
    client.force_login(lead)
    response = client.post(
        reverse("rater_add", args=[project.pk]),
        {"name": "gpt", "kind": "llm", "model": "gpt-4o", "api_url": fake.base_url,
         "api_key_env": KEY_VARIABLE, "temperature": "0", "samples": "1"},
    )  # fmt: skip
    assert response.status_code == 400
    assert b'data-field="model"' in response.content
    assert LLAMA_MODEL.encode() in response.content
    # The command: the option named.
    with pytest.raises(CommandError, match=r"^model: the endpoint does not serve gpt-4o"):
        call_command(
            "add_rater", "--project", project.name, "--name", "gpt", "--kind", "llm",
            "--model", "gpt-4o", "--api-url", fake.base_url, "--api-key-env", KEY_VARIABLE,
        )  # fmt: skip
    assert not MachineRater.objects.exists()

    # The listed name is accepted, and the run records what the server said it served.
    rater = _add(project, lead, fake, LLAMA_MODEL)
    run = _run(rater, "open")
    assert run.status == "done"
    assert run.served_model == LLAMA_MODEL
    assert run.endpoint["models_listed"] == [LLAMA_MODEL]
    assert {row.model for row in _labels(rater).values()} == {LLAMA_MODEL}
    assert {row.model_version for row in _labels(rater).values()} == {""}  # fingerprint null


def test_a_server_that_loaded_another_model_since_the_rater_was_added_fails_the_run_saying_so(
    project, lead, issues, serve
):
    fake = serve(FakeOpenAI.llama_cpp_python(LLAMA_MODEL), answers_for=issues)
    rater = _add(project, lead, fake, LLAMA_MODEL)
    fake.models = ["models/other-q4.gguf"]
    run = _run(rater)

    assert run.status == "failed"
    assert "configuration error" in run.error
    assert LLAMA_MODEL in run.error and "models/other-q4.gguf" in run.error
    assert fake.chats() == []  # nothing asked of the wrong model


def test_a_server_that_lists_no_models_gets_a_warning_not_a_refusal(
    client, project, lead, issues, serve
):
    fake = serve(FakeOpenAI(list_models=False, models=None), answers_for=issues)
    warnings: list[str] = []
    rater = _add(project, lead, fake, "fake-llm-7b", warn=warnings.append)
    assert len(warnings) == 1
    assert "fake-llm-7b was not checked" in warnings[0] and "404" in warnings[0]
    run = _run(rater, "open")
    assert run.status == "done"
    assert run.endpoint["models_listed"] is None
    assert run.endpoint["models_not_listed_why"].startswith("404")

    # The page shows the warning; the command prints it.
    client.force_login(lead)
    response = client.post(
        reverse("rater_add", args=[project.pk]),
        {"name": "second", "kind": "llm", "model": "fake-llm-7b", "api_url": fake.base_url,
         "api_key_env": KEY_VARIABLE, "temperature": "0", "samples": "1"},
        follow=True,
    )  # fmt: skip
    assert response.status_code == 200
    assert "fake-llm-7b was not checked" in response.content.decode()
    err = io.StringIO()
    call_command(
        "add_rater", "--project", project.name, "--name", "third", "--kind", "llm",
        "--model", "fake-llm-7b", "--api-url", fake.base_url, "--api-key-env", KEY_VARIABLE,
        stdout=io.StringIO(), stderr=err,
    )  # fmt: skip
    assert err.getvalue().startswith("warning: The model fake-llm-7b was not checked")
    assert MachineRater.objects.count() == 3


def test_a_wrong_key_when_the_rater_is_added_is_refused_naming_the_variable(project, lead, serve):
    fake = serve(FakeOpenAI(key="sk-the-right-one"))
    with pytest.raises(Refusal) as refused:
        _add(project, lead, fake, "fake-llm-7b")
    assert refused.value.field == "api_key_env"
    assert KEY_VARIABLE in refused.value.message
    assert KEY not in refused.value.message  # the server echoed it: removed


# -- a plain-text server -----------------------------------------------------------------------


def test_a_plain_text_server_is_asked_without_response_format_and_read_against_the_schema(
    project, lead, issues, serve
):
    fake = serve(FakeOpenAI(accepts=("text",)), answers_for=issues)
    open_issues = issues[15:]
    fake.unconstrained = {open_issues[0].title: "prose", open_issues[1].title: "extra_key"}
    rater = _add(project, lead, fake, "fake-llm-7b")
    run = _run(rater, "open")

    assert (run.status, run.done, run.invalid) == ("done", 5, 2)
    assert run.output_format == "text"
    # A 400 is a refusal at once: one request per refused form, none retried.
    assert fake.formats_asked() == ["json_schema", "json_object+schema"] + ["text"] * 5
    assert "not supported" in run.endpoint["refused"]["json_schema"]
    assert all("response_format" not in r.body for r in fake.chats()[2:])
    labels = _labels(rater)
    assert labels[open_issues[0].title].valid is False
    assert labels[open_issues[1].title].valid is False
    assert (
        "keys besides code (because)"
        in labels[open_issues[1].title].parameters["invalid_samples"][0]
    )
    # Plain text was drawn from its log-probabilities: they are the answer's.
    assert run.confidence_from == "logprobs"
    assert labels[open_issues[2].title].confidence == pytest.approx(0.9)


# -- refusals and outages ---------------------------------------------------------------------


def test_a_server_that_refuses_everything_with_the_same_500_is_a_configuration_error(
    project, lead, issues, serve
):
    fake = serve(FakeOpenAI(refuse_everything=(500, "model failed to load")), answers_for=issues)
    rater = _add(project, lead, fake, "fake-llm-7b")
    run = _run(rater)

    assert run.status == "failed"
    assert "configuration error" in run.error
    assert "model failed to load" in run.error
    assert "same answer to every form of output" in run.error
    assert "resume the run when the endpoint is back" not in run.error
    # Not a retry storm: two requests per form, for one issue.
    assert len(fake.chats()) == 6
    assert len(set(fake.titles_asked())) == 1
    assert not MachineLabel.objects.filter(rater=rater).exists()
    assert set(run.endpoint["refused"]) == {"json_schema", "json_object+schema", "text"}


def test_an_outage_that_fails_differently_each_time_is_retried_and_stops_as_an_outage(
    project, lead, issues, serve
):
    fake = serve(FakeOpenAI(server_errors=100), answers_for=issues)
    rater = _add(project, lead, fake, "fake-llm-7b")
    run = _run(rater)

    assert run.status == "failed"
    assert "resume the run when the endpoint is back" in run.error
    assert "configuration error" not in run.error
    # Every try of five issues in a row (three tries each): no form was given up for it.
    assert len(fake.chats()) == 5 * 3
    assert set(fake.formats_asked()) == {"json_schema"}
    assert run.output_format == ""


def test_an_outage_that_said_the_same_500_twice_does_not_cost_the_run_its_json_schema(
    project, lead, issues, serve
):
    fake = serve(
        FakeOpenAI(server_errors=2, server_error_message="upstream busy"), answers_for=issues
    )
    rater = _add(project, lead, fake, "fake-llm-7b")
    run = _run(rater, "open")

    assert (run.status, run.done) == ("done", 5)
    assert run.output_format == "json_schema"
    assert fake.formats_asked()[:4] == [
        "json_schema",
        "json_schema",
        "json_object+schema",
        "json_schema",  # asked once more: it answered
    ]
    assert run.endpoint["refused"] == {}


def test_issues_the_server_refuses_with_the_same_500_are_skipped_without_a_retry_storm(
    project, lead, issues, serve
):
    fake = serve(FakeOpenAI(), answers_for=issues)
    too_long = (500, "the prompt is longer than the context window (4096 tokens)")
    refused = [issue.title for issue in issues[16:18]]
    fake.refuse_titles = dict.fromkeys(refused, too_long)
    rater = _add(project, lead, fake, "fake-llm-7b")
    run = _run(rater, "open")

    assert run.status == "failed"
    assert run.done == 3
    assert "2 issue(s) refused by the endpoint" in run.error
    assert "context window" in run.error
    assert "not an outage" in run.error
    assert all(fake.titles_asked().count(title) == 2 for title in refused)

    # Five in a row refused alike stop the run as a configuration error.
    fake.refuse_titles = dict.fromkeys((issue.title for issue in issues), too_long)
    fake.requests.clear()
    second = _add(project, lead, fake, "fake-llm-7b", name="second")
    fake.refuse_titles = dict.fromkeys((issue.title for issue in issues[1:]), too_long)
    stopped = _run(second)
    assert stopped.status == "failed"
    assert stopped.error.startswith("llm: configuration error: 5 issues in a row were refused")
    # Twice each, for the five and the few already in flight (two at a time, four queued).
    asked = fake.titles_asked()
    assert all(asked.count(title) == 2 for title in set(asked) - {issues[0].title})
    assert len(asked) <= 1 + (5 + 4) * 2


# -- what the labels and the release say ------------------------------------------------------


def test_the_confidence_source_is_exported_with_each_label_and_described_per_rater(
    project, lead, issues, serve
):
    llama = serve(FakeOpenAI.llama_cpp_python(LLAMA_MODEL), answers_for=issues)
    hosted = serve(FakeOpenAI(), answers_for=issues)
    sampled = _add(project, lead, llama, LLAMA_MODEL, samples=3, temperature=0.7, name="llama")
    logprobs = _add(project, lead, hosted, "fake-llm-7b", name="hosted")
    _run(sampled, "final")
    _run(logprobs, "final")

    out = io.StringIO()
    write_machine_labels_csv(project, out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert {(r["rater"], r["confidence_from"]) for r in rows} == {
        ("llama", "samples"),
        ("hosted", "logprobs"),
    }
    described = {r["name"]: r for r in describe_raters(project)}
    assert described["llama"]["confidence_from"] == ["samples"]
    assert described["llama"]["output_formats"] == ["json_object+schema"]
    assert described["hosted"]["confidence_from"] == ["logprobs"]
    assert described["hosted"]["output_formats"] == ["json_schema"]


# -- a run whose command was killed -----------------------------------------------------------


def _dead_pid() -> int:
    """A pid no process has on this host (a killed command's)."""
    pid = int(Path("/proc/sys/kernel/pid_max").read_text()) - 1
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


def _left_running(rater, worker: str, heard=None) -> RaterRun:
    """A run its process left `running` after labeling two issues (as a killed command does)."""
    run = create_run(rater, "open")
    RaterRun.objects.filter(pk=run.pk).update(
        status=RaterRun.Status.RUNNING,
        worker=worker,
        heartbeat_at=heard or timezone.now(),
        started_at=timezone.now(),
    )
    run.refresh_from_db()
    return run


def test_a_run_whose_command_was_killed_is_stale_and_resumes_with_resume(
    client, project, lead, issues, serve
):
    fake = serve(FakeOpenAI(), answers_for=issues)
    rater = _add(project, lead, fake, "fake-llm-7b")
    run = _left_running(rater, f"{socket.gethostname()}:{_dead_pid()}")
    assert run.stale

    client.force_login(lead)
    page = client.get(reverse("rater_run_status", args=[project.pk, run.pk])).content.decode()
    assert "machine_label --resume" in page
    assert "hx-trigger" not in page  # the page stops polling a run no process runs

    out = io.StringIO()
    call_command(
        "machine_label", project=project.name, rater="llm", resume=True, wait=True, stdout=out
    )
    run.refresh_from_db()
    assert (run.status, run.done) == ("done", 5)
    assert run.worker == liveness.this_worker()
    assert f"run {run.pk} of llm: 5 issues labeled" in out.getvalue()


def test_a_run_another_process_is_running_is_not_resumed_nor_run_twice(
    project, lead, issues, serve
):
    fake = serve(FakeOpenAI(), answers_for=issues)
    rater = _add(project, lead, fake, "fake-llm-7b")
    # A worker on another host, heard of a minute ago.
    run = _left_running(rater, "worker-7.internal:4242", timezone.now() - timedelta(minutes=1))
    assert not run.stale

    with pytest.raises(CommandError, match=rf"^resume: run {run.pk} of llm is running"):
        call_command("machine_label", project=project.name, rater="llm", resume=True, wait=True)
    # The task delivered again while that worker runs it: left alone.
    again = run_rater(run.pk)
    assert again.status == "running" and fake.chats() == []

    # Not heard of for longer than JOB_STALE_SECONDS: stale, resumable.
    RaterRun.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - jobclaim.stale_after() - timedelta(seconds=1)
    )
    run.refresh_from_db()
    assert run.stale
    call_command("machine_label", project=project.name, rater="llm", resume=True, wait=True)
    run.refresh_from_db()
    assert run.status == "done"


def test_a_new_run_beside_a_stale_one_ends_the_stale_one_failed_and_starts(
    project, lead, issues, serve
):
    fake = serve(FakeOpenAI(), answers_for=issues)
    rater = _add(project, lead, fake, "fake-llm-7b")
    stale = _left_running(rater, f"{socket.gethostname()}:{_dead_pid()}")

    fresh = begin_run(rater, "open")

    stale.refresh_from_db()
    assert stale.status == "failed"
    assert "its process" in stale.error and "--resume" in stale.error
    assert fresh.pk != stale.pk and fresh.status == "pending"


def test_a_run_whose_process_is_alive_here_is_not_stale_while_it_fits_in_silence():
    """A process of this host is asked whether it lives, not timed: while it lives, a silence
    longer than another host's worker may keep leaves the run its own; only a silence past
    `ALIVE_STALE_AFTER` (its pid another process's since) makes it stale."""
    alive_here = f"{socket.gethostname()}:{os.getppid()}"
    quiet = RaterRun(
        status="running",
        worker=alive_here,
        heartbeat_at=timezone.now() - jobclaim.stale_after() - timedelta(minutes=5),
    )
    assert not quiet.stale
    quiet.heartbeat_at = timezone.now() - liveness.ALIVE_STALE_AFTER - timedelta(minutes=1)
    assert quiet.stale
