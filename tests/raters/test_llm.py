"""The lead's llm rater, end to end: the real `openai` client against a fake OpenAI-compatible
server on 127.0.0.1 (tests/raters/fakeopenai.py) that answers each issue by its title.

Scenarios: confidence from log-probabilities, or from k samples' agreement when the server gives
none; invalid outputs stored and counted; a 429 waits retry-after; a 500 and a dropped connection
are retried; a wrong key stops the run without the key in a message or a log; the key goes to
the endpoint's origin only; an endpoint not in MODEL_API_HOSTS is refused; a stopped run
resumes without duplicates; few-shot examples never include the issue being labeled.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from labeling.models import MachineLabel, MachineRater, Resolution
from lib.refusal import Refusal
from raters.models import RaterRun
from raters.runs import RaterSettings, add_rater, create_run, run_rater
from raters.validation import validation_report
from taxonomy.models import TaxonomyNode
from tests.raters.conftest import add_finals
from tests.raters.fakeopenai import FakeOpenAI

pytestmark = pytest.mark.django_db

KEY_VARIABLE = "TEST_LLM_RATER_KEY"
KEY = "sk-test-Secret-0123456789"


@pytest.fixture
def fake(settings):
    fake = FakeOpenAI().start()
    settings.MODEL_API_HOSTS = [fake.host]
    settings.MODEL_API_KEY_VARS = [KEY_VARIABLE]
    settings.MODEL_API_TIMEOUT = 5
    settings.MODEL_API_MAX_RETRIES = 2
    settings.MODEL_API_CONCURRENCY = 3
    yield fake
    fake.stop()


@pytest.fixture
def short_backoff(monkeypatch) -> None:
    """The rater's back-off between retries starts at 0.5 s (doubling): 50 ms here. The
    retries are what the tests check, not how long the rater waits between them."""
    monkeypatch.setattr("raters.llm.RETRY_DELAY", 0.05)


@pytest.fixture
def issues(project, repository):
    """15 final issues (3 of each label) and 5 open ones in the lead's project."""
    return add_finals(project, repository, 15, noise=0.0, open_issues=5)


@pytest.fixture
def answers(project, issues, fake) -> dict[str, str]:
    """The fake's answer per title: the final label's code, and "C.2" for open issues."""
    finals = {
        r.issue_id: r.label_code
        for r in Resolution.objects.filter(project=project).select_related(
            "issue_type", "theme", "sub_theme"
        )
    }
    fake.answers = {issue.title: finals.get(issue.pk, "C.2") for issue in issues}
    return fake.answers


def _rater(project, lead, fake, monkeypatch, samples: int = 1, **extra) -> MachineRater:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    settings = RaterSettings(
        name="llm",
        kind="llm",
        model="fake-llm-7b",
        api_url=fake.base_url,
        api_key_env=KEY_VARIABLE,
        samples=samples,
    )
    rater = add_rater(project, settings, lead)
    MachineRater.objects.filter(pk=rater.pk).update(seed=42, max_tokens=64, **extra)
    rater.refresh_from_db()
    fake.requests.clear()  # adding it asked GET /models: the tests read the runs' requests
    return rater


def _run(rater, only: str = "all") -> RaterRun:
    return run_rater(create_run(rater, only).pk)


def _labels(rater) -> dict[str, MachineLabel]:
    rows = MachineLabel.objects.filter(rater=rater, is_current=True).select_related(
        "issue", "issue_type", "theme", "sub_theme"
    )
    return {row.issue.title: row for row in rows}


def test_with_logprobs_the_label_is_the_answer_and_its_confidence_their_product(
    project, lead, issues, answers, fake, monkeypatch
):
    rater = _rater(project, lead, fake, monkeypatch)
    run = _run(rater)

    assert (run.status, run.done, run.invalid, run.error) == ("done", 20, 0, "")
    labels = _labels(rater)
    assert {title: row.label_code for title, row in labels.items()} == answers
    row = next(iter(labels.values()))
    assert row.confidence == pytest.approx(0.9)  # the fake's log-probabilities multiply to 0.9
    assert (row.model, row.model_version) == ("fake-llm-7b-served", "fp_fake_1")
    assert re.fullmatch(r"[0-9a-f]{64}", row.prompt_hash)
    assert row.parameters["temperature"] == 0.0
    assert row.parameters["seed"] == 42
    assert row.parameters["max_tokens"] == 64
    assert row.parameters["confidence_from"] == "logprobs"
    # The tokens the endpoint counted, summed on the run (and shown by the command).
    assert run.prompt_tokens == fake.prompt_tokens > 0
    assert run.completion_tokens == fake.completion_tokens > 0

    chats = fake.chats()
    assert len(chats) == 20
    # What the run found out: the first form of output, the model the answers named, and
    # log-probabilities that describe the answers (0.9 for a code among six: plausible).
    assert (run.output_format, run.served_model, run.confidence_from) == (
        "json_schema",
        "fake-llm-7b-served",
        "logprobs",
    )
    assert run.endpoint["models_listed"] == ["fake-llm-7b"]
    assert run.endpoint["refused"] == {}
    assert row.parameters["response_format"] == "json_schema"
    body = chats[0].body
    assert (body["model"], body["temperature"], body["seed"], body["max_tokens"]) == (
        "fake-llm-7b",
        0.0,
        42,
        64,
    )
    assert body["logprobs"] is True
    enum = body["response_format"]["json_schema"]["schema"]["properties"]["code"]["enum"]
    codes = set(
        TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id).values_list(
            "code", flat=True
        )
    )
    assert set(enum) == codes | {"FP"}
    assert body["response_format"]["type"] == "json_schema"
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in fake.requests)

    from raters.llm import LLMBackend

    assert LLMBackend(rater).served_models() == ["fake-llm-7b"]


@pytest.mark.parametrize("honour_n", [True, False], ids=["n-honoured", "n-ignored"])
def test_without_logprobs_the_confidence_is_the_agreement_of_k_samples(
    project, lead, issues, answers, fake, monkeypatch, honour_n
):
    fake.logprobs = False
    fake.honour_n = honour_n
    title = issues[0].title
    fake.samples = {title: ["C.1", "B.1", "C.1"]}
    rater = _rater(project, lead, fake, monkeypatch, samples=3)
    run = _run(rater, "final")

    assert (run.status, run.done, run.invalid) == ("done", 15, 0)
    labels = _labels(rater)
    assert labels[title].label_code == "C.1"
    assert labels[title].confidence == pytest.approx(2 / 3)
    assert labels[title].parameters["confidence_from"] == "samples"
    assert labels[issues[1].title].confidence == pytest.approx(1.0)
    assert (run.confidence_from, run.endpoint["confidence_why"]) == ("samples", "no_logprobs")
    asked = fake.titles_asked().count(title)
    # Three samples: in one request when the server honours n, else in three.
    assert asked == (1 if honour_n else 3)
    assert fake.chats()[0].body["n"] == 3


def test_invalid_outputs_are_stored_with_their_raw_text_and_counted(
    project, lead, issues, answers, fake, monkeypatch
):
    kinds = ["prose", "fenced", "truncated", "outside", "empty", "refusal"]
    fake.invalid = {issue.title: kind for issue, kind in zip(issues, kinds, strict=False)}
    rater = _rater(project, lead, fake, monkeypatch)
    run = _run(rater)

    assert (run.status, run.done, run.invalid) == ("done", 20, 6)
    labels = _labels(rater)
    bad = {issues[i].title: kinds[i] for i in range(6)}
    for title, row in labels.items():
        assert row.valid is (title not in bad), title
    assert "```json" in labels[issues[1].title].raw_output
    assert labels[issues[2].title].raw_output.startswith('{"code": "')
    assert "truncated" in labels[issues[2].title].parameters["invalid_samples"][0]
    assert labels[issues[3].title].raw_output == '{"code": "Z.9"}'
    assert "outside the taxonomy" in labels[issues[3].title].parameters["invalid_samples"][0]
    assert labels[issues[5].title].raw_output == "I can't help with labeling this."
    assert labels[issues[0].title].label_code == ""
    # The six are final issues: 6 invalid of the rater's 15 labels on final issues.
    row = validation_report(project)["raters"][0]
    assert row["invalid_rate"] == pytest.approx(6 / 15)
    assert row["n"] == 9


def test_a_429_is_retried_after_retry_after(
    project, lead, issues, answers, fake, monkeypatch, settings, short_backoff
):
    settings.MODEL_API_CONCURRENCY = 1
    # The client's own back-off is 50 ms here (short_backoff): waiting 0.3 s is the server's.
    fake.rate_limited, fake.retry_after = 1, "0.3"
    rater = _rater(project, lead, fake, monkeypatch)
    run = _run(rater, "open")

    assert (run.status, run.done) == ("done", 5)
    first, second = fake.chats()[0], fake.chats()[1]
    assert first.title == second.title
    assert second.at - first.at >= 0.28  # waited the time the server asked for
    assert len(fake.chats()) == 6


def test_a_500_and_a_dropped_connection_are_retried(
    project, lead, issues, answers, fake, monkeypatch, settings, short_backoff
):
    settings.MODEL_API_CONCURRENCY = 1
    fake.server_errors, fake.dropped = 1, 1
    rater = _rater(project, lead, fake, monkeypatch)
    run = _run(rater, "open")

    assert (run.status, run.done, run.invalid) == ("done", 5, 0)
    assert len(fake.chats()) == 7  # 5 answers, a 500 and a dropped connection
    # A 500 then a dropped connection is an outage, not a refusal of the form of output.
    assert (run.output_format, run.endpoint["refused"]) == ("json_schema", {})


def test_a_wrong_key_stops_the_run_and_is_never_shown_or_logged(
    project, lead, issues, answers, fake, monkeypatch, caplog
):
    caplog.set_level(logging.DEBUG)
    rater = _rater(project, lead, fake, monkeypatch)
    fake.key = "sk-the-right-one"  # the key was rotated since the rater was added
    run = _run(rater)

    assert run.status == "failed"
    assert "401" in run.error
    assert KEY_VARIABLE in run.error
    assert not MachineLabel.objects.filter(rater=rater).exists()
    # The probe can fire: the key was sent, the server's message echoed it, the client logged.
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert "***" in run.error
    assert caplog.records
    assert KEY not in run.error
    assert KEY not in caplog.text
    # Fatal: the run stopped instead of asking for every issue.
    assert len(fake.requests) < 20


def test_the_key_goes_to_the_endpoints_origin_only(
    project, lead, issues, answers, fake, monkeypatch, settings
):
    other = FakeOpenAI().start()
    try:
        settings.MODEL_API_HOSTS = [fake.host, other.host]  # even a listed host gets nothing
        fake.redirect_to = f"{other.base_url}/chat/completions"
        rater = _rater(project, lead, fake, monkeypatch)
        run = _run(rater)
    finally:
        other.stop()

    assert run.status == "failed"
    assert "307" in run.error and "redirect" in run.error
    assert fake.requests and fake.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert other.requests == []


def test_an_endpoint_not_in_model_api_hosts_is_refused(
    project, lead, issues, answers, fake, monkeypatch, settings
):
    settings.MODEL_API_HOSTS = []
    with pytest.raises(Refusal) as refused:
        _rater(project, lead, fake, monkeypatch)
    assert refused.value.field == "api_url"
    assert "127.0.0.1 is not listed in MODEL_API_HOSTS" in refused.value.message

    # A rater added while the host was listed, run after an admin took it off the list.
    settings.MODEL_API_HOSTS = [fake.host]
    rater = _rater(project, lead, fake, monkeypatch)
    settings.MODEL_API_HOSTS = ["models.example.org"]
    run = _run(rater)
    assert run.status == "failed"
    assert "not listed in MODEL_API_HOSTS" in run.error
    assert fake.requests == []


@pytest.mark.parametrize("secret", ["SECRET_KEY", "DATABASE_URL", "GITHUB_TOKEN"])
def test_a_lead_naming_a_server_secret_as_the_key_is_refused_everywhere(
    client, project, lead, fake, monkeypatch, secret
):
    monkeypatch.setenv(secret, "server-secret-value")
    # The page: a 400 beside the field, nothing stored.
    client.force_login(lead)
    response = client.post(
        reverse("rater_add", args=[project.pk]),
        {"name": "gpt", "kind": "llm", "model": "m", "api_url": fake.base_url,
         "api_key_env": secret, "temperature": "0", "samples": "1"},
    )  # fmt: skip
    assert response.status_code == 400
    assert b'data-field="api_key_env"' in response.content
    assert b"MODEL_API_KEY_VARS" in response.content
    # The function the page and the command call.
    with pytest.raises(Refusal) as refused:
        add_rater(
            project,
            RaterSettings(name="gpt", kind="llm", model="m", api_url=fake.base_url,
                          api_key_env=secret),
        )  # fmt: skip
    assert refused.value.field == "api_key_env"
    assert not MachineRater.objects.filter(project=project).exists()


def test_a_stored_rater_naming_an_unlisted_variable_sends_nothing_and_says_the_same_as_unset(
    project, lead, issues, answers, fake, monkeypatch, settings
):
    # Stored while the name was listed; an admin has since taken it off the list.
    rater = _rater(project, lead, fake, monkeypatch)
    settings.MODEL_API_KEY_VARS = []
    unlisted = _run(rater)
    assert unlisted.status == "failed"
    assert fake.requests == []
    assert KEY not in unlisted.error

    # Listed again but unset: the same message, so a lead learns nothing of what is set.
    settings.MODEL_API_KEY_VARS = [KEY_VARIABLE]
    monkeypatch.delenv(KEY_VARIABLE)
    unset = _run(rater)
    assert unset.status == "failed"
    assert fake.requests == []
    assert unset.error == unlisted.error
    assert "api_key_env" in unset.error


def test_the_taxonomys_example_details_reach_the_prompt_only_when_the_lead_turns_them_on(
    client, project, lead, issues, answers, fake, monkeypatch
):
    """Details are what annotators wrote about study issues (maybe the one labeled): off by
    default, so validation stays out of sample; on, the rater and its labels say so."""
    TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id).update(
        details=["a detail an annotator wrote about issue 1234"]
    )
    plain = _rater(project, lead, fake, monkeypatch)
    _run(plain, "open")
    system = fake.requests[-1].body["messages"][0]["content"]
    assert "a detail an annotator wrote" not in system
    plain_labels = list(_labels(plain).values())
    assert {row.parameters["prompt_details"] for row in plain_labels} == {False}

    detailed = add_rater(
        project,
        RaterSettings(name="llm-details", kind="llm", model="fake-llm-7b", api_url=fake.base_url,
                      api_key_env=KEY_VARIABLE, prompt_details=True),
    )  # fmt: skip
    MachineRater.objects.filter(pk=detailed.pk).update(seed=42, max_tokens=64)
    detailed.refresh_from_db()
    _run(detailed, "open")
    system = fake.requests[-1].body["messages"][0]["content"]
    assert "(e.g. a detail an annotator wrote about issue 1234)" in system
    detailed_labels = _labels(detailed)
    assert {row.parameters["prompt_details"] for row in detailed_labels.values()} == {True}
    # Same few-shot examples, same guideline: only the details tell the two hashes apart.
    by_title = {row.issue.title: row.prompt_hash for row in plain_labels}
    assert all(by_title[t] != row.prompt_hash for t, row in detailed_labels.items())

    client.force_login(lead)
    page = client.get(reverse("raters_page", args=[project.pk])).content.decode()
    assert page.count("details in prompt") == 2  # the hint, and the one rater marked
    assert "may not be fully out of sample" in page


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1?key=x", "http://127.0.0.1:8000/v1#a"])
def test_an_endpoint_with_a_query_or_fragment_is_refused_naming_the_field(project, settings, url):
    settings.MODEL_API_HOSTS = ["http://127.0.0.1:8000"]
    with pytest.raises(Refusal) as refused:
        add_rater(project, RaterSettings(name="q", kind="llm", model="m", api_url=url))
    assert refused.value.field == "api_url"
    assert "no query or fragment" in refused.value.message


class Killed(BaseException):
    """A worker killed mid-run (not an Exception: nothing in the run may catch it)."""


def test_a_run_killed_halfway_resumes_without_duplicates(
    project, lead, issues, answers, fake, monkeypatch, settings
):
    from raters import runs

    settings.MODEL_API_CONCURRENCY = 1
    rater = _rater(project, lead, fake, monkeypatch)
    store = runs._store
    calls = []

    def store_then_die(*args, **kwargs):
        calls.append(1)
        if len(calls) == 8:
            raise Killed
        return store(*args, **kwargs)

    monkeypatch.setattr(runs, "_store", store_then_die)
    run = create_run(rater)
    with pytest.raises(Killed):
        run_rater(run.pk)
    run.refresh_from_db()
    assert run.status == "running"
    stored_before = {row.issue.title for row in MachineLabel.objects.filter(run=run)}
    assert len(stored_before) == 7
    asked_before = len(fake.requests)

    monkeypatch.setattr(runs, "_store", store)
    run = run_rater(run.pk)  # the task delivered again

    assert (run.status, run.done) == ("done", 20)
    per_issue = [row.issue_id for row in MachineLabel.objects.filter(run=run)]
    assert len(per_issue) == len(set(per_issue)) == 20
    asked_after = {r.title for r in fake.requests[asked_before:]}
    assert not asked_after & stored_before


def test_an_issue_slower_than_the_timeout_fails_the_run_which_resumes_by_command(
    project, lead, issues, answers, fake, monkeypatch, settings, short_backoff
):
    settings.MODEL_API_TIMEOUT = 0.5
    settings.MODEL_API_MAX_RETRIES = 1
    slow = issues[16].title  # an open issue
    fake.slow = {slow: 2.0}
    rater = _rater(project, lead, fake, monkeypatch)
    run = _run(rater, "open")

    assert run.status == "failed"
    assert "1 issue(s) got no answer" in run.error
    assert run.done == 4
    assert slow not in _labels(rater)

    fake.slow = {}
    asked_before = len(fake.requests)
    call_command("machine_label", project=project.name, rater="llm", resume=True, wait=True)
    run.refresh_from_db()
    assert (run.status, run.done) == ("done", 5)
    assert _labels(rater)[slow].label_code == "C.2"
    assert [r.title for r in fake.requests[asked_before:] if r.title] == [slow]


def test_few_shot_examples_never_include_the_issue_being_labeled(
    project, lead, issues, answers, fake, monkeypatch
):
    project.guideline = "Label the root cause, not the symptom."
    project.save(update_fields=["guideline"])
    rater = _rater(project, lead, fake, monkeypatch)
    run = _run(rater, "final")
    assert run.status == "done"

    examples_seen = set()
    for request in fake.chats():
        users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
        example_titles = [u.split("\n")[1] for u in users[:-1]]
        assert len(example_titles) == 8
        assert request.title not in example_titles
        examples_seen.update(example_titles)
        system = request.body["messages"][0]["content"]
        assert "Label the root cause, not the symptom." in system
    # Some labeled issues are examples for the others: the probe could fire.
    assert examples_seen & {r.title for r in fake.requests}
    labels = _labels(rater)
    by_title = {issue.title: issue.pk for issue in issues}
    for title, row in labels.items():
        assert by_title[title] not in row.parameters["few_shot"]
        assert len(row.parameters["few_shot"]) == 8
    # An issue that is an example for the others was asked with another set: another hash.
    assert len({row.prompt_hash for row in labels.values()}) > 1


def test_the_lead_adding_an_unlisted_endpoint_gets_a_400_naming_the_field(
    client, project, lead, settings
):
    settings.MODEL_API_HOSTS = ["models.internal:8000"]
    settings.MODEL_API_KEY_VARS = ["KEY"]
    client.force_login(lead)
    response = client.post(
        reverse("rater_add", args=[project.pk]),
        {
            "name": "gpt",
            "kind": "llm",
            "model": "m",
            "api_url": "http://169.254.169.254/v1",
            "api_key_env": "KEY",
            "temperature": "0",
            "samples": "1",
        },
    )
    assert response.status_code == 400
    assert "169.254.169.254 is not listed in MODEL_API_HOSTS" in response.content.decode()
    assert not MachineRater.objects.filter(project=project).exists()


def test_the_page_shows_the_tokens_a_run_spent(
    client, project, lead, issues, answers, fake, monkeypatch
):
    rater = _rater(project, lead, fake, monkeypatch)
    run = _run(rater, "open")
    client.force_login(lead)
    response = client.get(reverse("rater_run_status", args=[project.pk, run.pk]))
    text = response.content.decode()
    assert f"tokens {fake.prompt_tokens} prompt + {fake.completion_tokens} completion" in text


def test_a_bad_model_api_hosts_entry_fails_the_system_check(settings):
    from raters.checks import check_model_api_hosts

    settings.MODEL_API_HOSTS = ["models.internal:8000"]
    assert check_model_api_hosts(None) == []
    settings.MODEL_API_HOSTS = ["https://user@models.internal/v1"]
    errors = check_model_api_hosts(None)
    assert [e.id for e in errors] == ["raters.E001"]
    assert "MODEL_API_HOSTS" in errors[0].msg


def test_one_sample_without_logprobs_has_no_confidence(
    project, lead, issues, answers, fake, monkeypatch
):
    fake.logprobs = False
    rater = _rater(project, lead, fake, monkeypatch, samples=1)
    run = _run(rater, "open")
    assert (run.status, run.done) == ("done", 5)
    labels = _labels(rater)
    assert [row.label_code for row in labels.values()] == ["C.2"] * 5
    assert {row.confidence for row in labels.values()} == {None}


@pytest.mark.slow  # starts a Python process
def test_loading_the_url_conf_and_the_tasks_does_not_import_openai():
    # openai costs ~2.5 s to import: only a run of an llm rater may pay it (raters.llm).
    code = (
        "import django, sys; django.setup()\n"
        "from config.celery import app; app.loader.import_default_modules()\n"
        "from django.urls import get_resolver; get_resolver().url_patterns\n"
        "import raters.runs, raters.tasks, raters.views\n"
        "print('openai' in sys.modules, 'raters.llm' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["False", "False"]
    # The probe can fire: importing the backend does import it.
    probe_code = code.replace("import raters.runs,", "import raters.llm, raters.runs,")
    probe = subprocess.run(
        [sys.executable, "-c", probe_code],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.stdout.split()[-2:] == ["True", "True"]


@pytest.mark.parametrize(
    ("status", "words"),
    [(403, "may not use it"), (404, "no such model or path"), (400, "refused the request")],
)
def test_a_403_404_or_400_stops_the_run_at_once_saying_why(
    project, lead, issues, answers, fake, monkeypatch, status, words
):
    rater = _rater(project, lead, fake, monkeypatch)
    fake.status = status
    run = _run(rater)

    assert run.status == "failed"
    assert run.error.startswith(f"llm: {status}, ")
    assert words in run.error
    assert not MachineLabel.objects.filter(rater=rater).exists()
    assert len(fake.requests) < 20  # not retried, not asked for every issue
