"""The llm machine rater: any OpenAI-compatible chat-completions endpoint (vLLM, Ollama,
llama.cpp's server, llama-cpp-python, hosted APIs) through the official `openai` client.

Per issue: one request with the prompt of `raters.prompt` (taxonomy, guideline, few-shot
examples from final labels, never the issue itself), the answer's JSON schema (an enum of the
taxonomy's codes and "FP") in the form the endpoint accepts, the rater's temperature, seed and
max tokens, `logprobs`, and `n` = the rater's `samples`. A server that returns fewer choices
than asked (`n` not honoured) is asked again until there are k samples, unless the run's
confidence comes from log-probabilities: then one sample is enough. Every label records the
served model (`response.model`), `system_fingerprint`, the prompt hash, the parameters (the
form of output and the confidence's source among them) and the tokens counted (`usage`,
summed per run by the runner).

What the endpoint accepts is found out once per run (`probe`), on the first issues, one at a
time, and recorded on the run (`RaterRun.output_format`, `served_model`, `confidence_from`,
`endpoint`):
- the model: `GET /models`; a model it does not list stops the run (a server may answer any
  model name with the one it has loaded, and echo the name asked: llama-cpp-python); one that
  lists none is noted and the run goes on;
- the form of structured output, best first (`raters.prompt.FORMATS`): `json_schema`, then
  `json_object` with a `schema`, then plain text read against the schema. A form is refused
  by a 400 or 422, or by a 500 that says the same twice in a row (llama-cpp-python refuses
  `json_schema` with an HTTP 500 whose message names `response_format.type`); a better form
  refused by a 500 is asked once more when a lesser one worked, so an outage does not cost the
  run its constrained output. Every form refused is a configuration error, said as such;
- where the confidence comes from: log-probabilities only when they can describe the answer
  given (`prompt.plausible`; plain text always: the answer was drawn from them). Some servers
  return those of the distribution before the grammar (llama-cpp-python: a forced code at -17
  per token, a "confidence" of 4e-15); then, and when there are none, the agreement of the
  rater's k samples (`prompt.agreement`), or no confidence with one sample. Decided on the
  first answer with a valid code (at most `PROBE_ISSUES` issues); afterwards a label whose own
  log-probabilities are implausible takes its samples' agreement, or none, and says so.

Failures: the run retries a 429 (honouring `retry-after`), a 5xx, a timeout and a dropped
connection with exponential back-off (`MODEL_API_MAX_RETRIES` retries, `MODEL_API_TIMEOUT`
seconds each), except a 500 that repeats word for word: that is the endpoint refusing the
request, and asking again will not change it. An issue still unanswered is skipped and the
run goes on; `MAX_FAILURES_IN_A_ROW` such issues in a row stop it, as a configuration error
when they were all the same refusal, else as an outage to resume once the endpoint is back; a
run with skipped issues ends failed, saying how many, and resuming it (`manage.py
machine_label --resume`) asks only for the issues not labeled yet. 401, 403, 404, and any other
answer not retried (a redirect included) stop the run at once with a message naming the status
and the variable that holds the key.

The key: read from the environment variable the rater names (`api_key_env`), only if an admin
lists that name in MODEL_API_KEY_VARS (`raters.runs.key_variable_refused`, checked again here
before reading; an unlisted and an unset variable get the same message), sent only to
the endpoint's origin: the HTTP client follows no redirect, ignores proxy variables and .netrc
(`trust_env=False`) and refuses, before sending, any request whose URL is not on the
endpoint's scheme, host and port or not allowed by MODEL_API_HOSTS (`ingest.hosts`, the forge
hosts' rule). The key is removed from every error message the run stores, and never logged
(the client's own log filter hides the Authorization header). Requests run `MODEL_API_CONCURRENCY`
at a time in threads; the runner stores each label as it comes (`store_every = 1`); while it
waits for answers, the run's heartbeat is written by its own thread (`lib.jobs.Heartbeat`).

This module imports `openai` (~2.5 s): only `raters.backends.backend_for` imports it, on use.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx2
import openai
from django.conf import settings

from ingest.hosts import HostRefused, same_origin
from raters import prompt
from raters.backends import BackendError, IssueText, KeyRefused, LabelRequest, Prediction
from raters.runs import (
    KEY_VARIABLE_REFUSED,
    key_variable_refused,
    model_listed,
    model_url_refused,
)

if TYPE_CHECKING:
    from labeling.models import MachineRater

FEW_SHOT = 8
TOP_LOGPROBS = 1
MAX_FAILURES_IN_A_ROW = 5
# The placeholder key for a local server that needs none (the client insists on one).
NO_KEY = "none"
# Back-off between tries: RETRY_DELAY doubling up to MAX_RETRY_DELAY; a server's retry-after
# is honoured up to MAX_RETRY_AFTER seconds (the openai client's own rule).
RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
# Statuses that refuse a request as written (the form of output, a parameter).
REFUSING = (400, 422)
# Issues asked one at a time, at most, before the run's confidence source is decided.
PROBE_ISSUES = 5
# Seconds to wait for `GET /models` when a rater is added.
MODEL_CHECK_TIMEOUT = 20.0

LOGPROBS, SAMPLES, NONE = "logprobs", "samples", "none"
# Why a run's confidence comes from where it does (`RaterRun.endpoint["confidence_why"]`):
# log-probabilities that can describe the answer; ones of the distribution before the grammar
# (`prompt.plausible`); none returned; no valid code in the first PROBE_ISSUES answers.
WHY = ("logprobs_of_answer", "logprobs_before_grammar", "no_logprobs", "no_valid_answer")


@dataclass(frozen=True)
class Failure:
    """One try without an answer: the status (None: no answer at all) and the server's words."""

    status: int | None
    message: str

    def __str__(self) -> str:
        return f"{self.status} {self.message}" if self.status else self.message


class NoAnswer(Exception):
    """An issue the endpoint did not answer after every retry (timeouts, 429s, 5xx)."""

    def __init__(self, failure: Failure, tries: int) -> None:
        super().__init__(f"{failure} after {tries} tries")
        self.failure = failure


class Refused(Exception):
    """The endpoint answered a request with the same 500 twice in a row: it refuses it."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(f"refused: {failure}")
        self.failure = failure


@dataclass
class Sample:
    output: prompt.Output
    content: str
    confidence: float | None  # from log-probabilities of the code, when the endpoint gave them
    plausible: bool = True  # those log-probabilities can describe the answer given
    has_logprobs: bool = False


@dataclass
class Asked:
    """One issue's answers, before the run's confidence rule makes them a label."""

    item: IssueText
    form: str
    shots: list[int]
    samples: list[Sample] = field(default_factory=list)
    served: str = ""
    fingerprint: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _words(exc: openai.APIStatusError) -> str:
    """The server's own message of an error answer (its body's `message`), else the client's."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return exc.message


def _retry_after(response: httpx2.Response | None) -> float | None:
    """The seconds a server asks to wait (`retry-after-ms`, `retry-after` in seconds or as a
    date), if it asks for a wait the run may honour."""
    if response is None:
        return None
    headers = response.headers
    for header, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            when = email.utils.parsedate_tz(value)
            if when is None:
                continue
            seconds = email.utils.mktime_tz(when) - time.time()
        if 0 < seconds <= MAX_RETRY_AFTER:
            return seconds
    return None


def _backoff(attempt: int) -> float:
    return min(RETRY_DELAY * 2.0**attempt, MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


class LLMBackend:
    trains = False
    reads_finals = True
    store_every = 1

    def __init__(self, rater: MachineRater) -> None:
        self.rater = rater
        self.key = ""
        self.form: str | None = None  # the form of output the endpoint accepts (the probe's)
        self.confidence_from: str | None = None  # LOGPROBS, SAMPLES or NONE (the probe's)
        self.codes: set[str] = set()
        self.code_list: list[str] = []
        self.refused: dict[str, str] = {}  # the forms of output refused, and how
        self.probe_p: float | None = None  # the implausible confidence the probe saw

    # -- the client ----------------------------------------------------------------------

    def _key(self) -> str:
        name = self.rater.api_key_env
        if not name:
            return NO_KEY
        # Checked again here: a rater stored before MODEL_API_KEY_VARS changed reads no
        # unlisted variable. Unlisted and unset get the same words (no oracle of what is set).
        key = "" if key_variable_refused(name) else os.environ.get(name, "")
        if not key:
            raise BackendError(f"llm: api_key_env {name}: not set, or {KEY_VARIABLE_REFUSED}")
        return key

    def _secret_free(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key and self.key != NO_KEY else text

    def client(self, timeout: float | None = None) -> openai.OpenAI:
        """The client for the rater's endpoint, refusing any request off its origin. It
        retries nothing itself: `_call` does, to tell a refusal from an outage."""
        base = self.rater.api_url.rstrip("/")
        why = model_url_refused(base)
        if why:
            raise BackendError(f"llm: api_url: {why}")
        self.key = self._key()

        def guard(request: httpx2.Request) -> None:
            url = str(request.url)
            why = model_url_refused(url)
            if why or not same_origin(url, base):
                raise HostRefused(f"request refused: {why or url + ' is not the endpoint origin'}")

        concurrency = max(1, settings.MODEL_API_CONCURRENCY)
        seconds = timeout or settings.MODEL_API_TIMEOUT
        http = httpx2.Client(
            follow_redirects=False,
            trust_env=False,
            timeout=seconds,
            limits=httpx2.Limits(max_connections=concurrency),
            event_hooks={"request": [guard]},
        )
        return openai.OpenAI(
            base_url=base,
            api_key=self.key,
            max_retries=0,
            timeout=seconds,
            http_client=http,
        )

    def served_models(self) -> list[str]:
        """The models the endpoint serves (`GET /models`), to check a rater's settings."""
        with self.client() as client:
            return [model.id for model in client.models.list()]

    def listed_models(
        self, client: openai.OpenAI | None = None, check: bool = False
    ) -> tuple[list[str] | None, str]:
        """The models the endpoint lists (`GET /models`), or None and why it lists none (no
        such route, an error, no answer). KeyRefused for a 401 or 403; BackendError for what
        stops a run (a redirect, a host refused, a key not set). `check`: when a rater is
        added (a shorter timeout)."""
        own = client is None
        if client is None:
            client = self.client(MODEL_CHECK_TIMEOUT if check else None)
        try:
            return [str(model.id) for model in client.models.list()], ""
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise KeyRefused(str(self.fatal(exc))) from None
        except HostRefused as exc:
            raise self.fatal(exc) from None
        except openai.APIStatusError as exc:
            if 300 <= exc.status_code < 400:
                raise self.fatal(exc) from None
            return None, self._secret_free(f"{exc.status_code} {_words(exc)}")[:200]
        except openai.APIConnectionError as exc:
            return None, f"no answer: {type(exc).__name__}"
        except (openai.APIError, AttributeError, TypeError, ValueError) as exc:
            return None, f"not a list of models: {type(exc).__name__}"
        finally:
            if own:
                client.close()

    def fatal(self, exc: Exception) -> BackendError:
        """The run-stopping error, in words, without the key."""
        if isinstance(exc, HostRefused):
            return BackendError(f"llm: {exc}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            if 300 <= status < 400:
                hint = "a redirect, not followed (the key goes to the endpoint's origin only)"
            else:
                hint = self._hint(status)
            return BackendError(f"llm: {status}, {hint}: {self._secret_free(exc.message)[:300]}")
        return BackendError(f"llm: {self._secret_free(str(exc))[:300]}")

    def _hint(self, status: int | None) -> str:
        variable = self.rater.api_key_env or "no variable"
        return {
            401: f"the endpoint refused the key (from {variable})",
            403: f"the key (from {variable}) may not use it",
            404: f"no such model or path ({self.rater.model!r} at {self.rater.api_url})",
            400: "the endpoint refused the request (schema, logprobs or a parameter)",
            422: "the endpoint refused the request (schema, logprobs or a parameter)",
            500: "the endpoint refused the request with an internal error",
        }.get(status or 0, "an answer the run cannot go on from")

    # -- one request -----------------------------------------------------------------------

    def _call(
        self,
        client: openai.OpenAI,
        messages: list[dict[str, str]],
        n: int,
        form: str,
        known: Failure | None = None,
    ) -> Any:
        """One chat completion in the given form of output, retried on 429, 5xx, timeouts and
        dropped connections (NoAnswer once the retries are spent); a 500 that says the same
        twice in a row (or the same as `known`, a refusal seen before) is a refusal (Refused),
        not retried again."""
        kwargs: dict[str, Any] = {
            "model": self.rater.model,
            "messages": messages,
            "temperature": self.rater.temperature,
            "max_tokens": self.rater.max_tokens,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        response_format = prompt.response_format(form, self.code_list)
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self.rater.seed is not None:
            kwargs["seed"] = self.rater.seed
        if n > 1:
            kwargs["n"] = n
        tries = max(0, settings.MODEL_API_MAX_RETRIES) + 1
        previous = known
        for attempt in range(tries):
            delay: float | None = None
            try:
                return client.chat.completions.create(**kwargs)
            except openai.RateLimitError as exc:
                failure = Failure(429, self._secret_free(_words(exc))[:300])
                delay = _retry_after(exc.response)
            except openai.InternalServerError as exc:
                failure = Failure(exc.status_code, self._secret_free(_words(exc))[:300])
                if exc.status_code == 500 and failure == previous:
                    raise Refused(failure) from None
                delay = _retry_after(exc.response)
            except openai.APIConnectionError as exc:  # timeouts too
                failure = Failure(None, type(exc).__name__)
            previous = failure
            if attempt + 1 < tries:
                time.sleep(delay if delay is not None else _backoff(attempt))
        assert previous is not None
        raise NoAnswer(previous, tries)

    def _sample(self, choice: Any, form: str) -> Sample:
        message = choice.message
        content = message.content or ""
        output = prompt.read_output(
            message.content, choice.finish_reason, getattr(message, "refusal", None), self.codes
        )
        confidence, plausible = None, True
        tokens = getattr(getattr(choice, "logprobs", None), "content", None)
        if output.code is not None and tokens:
            logprobs = prompt.code_logprobs(
                content, [(t.token, t.logprob) for t in tokens], output.code
            )
            if logprobs is not None:
                confidence = math.exp(sum(logprobs))
                # Plain text was drawn from these very probabilities; a constrained answer's
                # may be of the distribution before the grammar.
                plausible = form == prompt.TEXT or prompt.plausible(logprobs, len(self.codes))
        if not content and getattr(message, "refusal", None):
            content = str(message.refusal)
        return Sample(output, content, confidence, plausible, bool(tokens))

    def ask(
        self,
        client: openai.OpenAI,
        item: IssueText,
        form: str,
        mode: str | None,
        known: Failure | None = None,
    ) -> Asked:
        """One issue's samples in the given form: k of them, or one whose log-probabilities
        can be trusted while the run takes its confidence from them (`mode` LOGPROBS, or None
        while the probe decides). `known`: a refusal of this form seen before (`_call`)."""
        shots = prompt.few_shot_for(self.order, item.issue_id, FEW_SHOT)
        examples = [(self.shot_texts.get(i, ""), self.finals[i]) for i in shots]
        chat = prompt.messages(self.system, examples, item.text)
        asked = Asked(item, form, shots)
        k = max(1, self.rater.samples)
        while len(asked.samples) < k:
            response = self._call(client, chat, k - len(asked.samples), form, known)
            asked.served = asked.served or str(response.model or "")
            asked.fingerprint = asked.fingerprint or str(response.system_fingerprint or "")
            if response.usage is not None:
                asked.prompt_tokens += response.usage.prompt_tokens or 0
                asked.completion_tokens += response.usage.completion_tokens or 0
            got = [self._sample(choice, form) for choice in response.choices or ()]
            asked.samples.extend(got)
            if not got:
                break  # no choice: nothing to wait for
            trusted = any(s.confidence is not None and s.plausible for s in asked.samples)
            if mode in (LOGPROBS, None) and trusted:
                break  # log-probabilities to trust: one sample is enough
        return asked

    def predict(self, asked: Asked) -> Prediction:
        """The label of one issue's samples under the run's confidence rule."""
        samples = asked.samples
        code, share = prompt.agreement([s.output for s in samples])
        confidence: float | None = None
        source = ""
        implausible = any(s.confidence is not None and not s.plausible for s in samples)
        if code is not None and self.confidence_from == LOGPROBS:
            trusted = [
                s
                for s in samples
                if s.confidence is not None and s.plausible and s.output.code == code
            ]
            if trusted:
                confidence, source = trusted[0].confidence, LOGPROBS
        if code is not None and source == "" and self.confidence_from != NONE and len(samples) > 1:
            confidence, source = share, SAMPLES  # one sample agrees with itself: that says nothing
        whys = [s.output.why for s in samples if s.output.why]
        parameters = {
            **self.parameters,
            "response_format": asked.form,
            "few_shot": asked.shots,
            "confidence_from": source,
            "samples_received": len(samples),
        }
        if implausible:
            parameters["logprobs_implausible"] = True
        if whys:
            parameters["invalid_samples"] = whys
        raw = samples[0].content if len(samples) == 1 else json.dumps([s.content for s in samples])
        return Prediction(
            issue_id=asked.item.issue_id,
            code=code,
            confidence=confidence,
            raw_output=raw,
            prompt_hash=prompt.prompt_hash(
                self.taxonomy_version, self.guideline, asked.shots, self.details
            ),
            model=asked.served,
            model_version=asked.fingerprint,
            parameters=parameters,
            prompt_tokens=asked.prompt_tokens,
            completion_tokens=asked.completion_tokens,
        )

    # -- what the endpoint accepts ---------------------------------------------------------

    def probe(self, client: openai.OpenAI, item: IssueText) -> Asked:
        """Ask the first issue in the best form of output the endpoint accepts, and remember
        that form for the run; BackendError (a configuration error) when it refuses them all."""
        refused: dict[str, Failure] = {}
        for form in prompt.FORMATS:
            try:
                asked = self.ask(client, item, form, None)
            except Refused as exc:
                refused[form] = exc.failure
                continue
            except openai.APIStatusError as exc:
                if exc.status_code not in REFUSING:
                    raise
                refused[form] = Failure(exc.status_code, self._secret_free(_words(exc))[:300])
                continue
            # A better form refused by a 500 (said twice alike: maybe an outage that said the
            # same twice) is asked once more before the run settles for less; the same words
            # again confirm the refusal.
            for better in prompt.FORMATS[: prompt.FORMATS.index(form)]:
                if (refused[better].status or 0) < 500:
                    continue
                try:
                    asked, form = self.ask(client, item, better, None, refused[better]), better
                    break
                except (Refused, NoAnswer, openai.APIStatusError):
                    continue
            self.form = form
            self.refused = {f: str(v) for f, v in refused.items() if f != form}
            return asked
        self.refused = {f: str(v) for f, v in refused.items()}
        raise BackendError(self._refused_everything(refused))

    def _refused_everything(self, refused: dict[str, Failure]) -> str:
        failures = list(refused.values())
        tail = (
            "a configuration error, not an outage: resuming will not help until the endpoint "
            "or the rater's settings change (the server's log says more)"
        )
        if all(f == failures[0] for f in failures):
            first = failures[0]
            return (
                f"llm: {first.status}, {self._hint(first.status)}: {first.message} -- the same "
                f"answer to every form of output ({', '.join(refused)}), each time: {tail}"
            )
        each = "; ".join(f"{form}: {failure}" for form, failure in refused.items())
        return f"llm: the endpoint refused every form of output, each the same way ({each}): {tail}"

    def decide(self, asked: Asked) -> tuple[str, str] | None:
        """The run's confidence source and why (one of `WHY`), from one issue's answers; None
        when they do not tell (log-probabilities but no valid code to read them at)."""
        k = max(1, self.rater.samples)
        fallback = SAMPLES if k > 1 else NONE
        with_logprobs = [s for s in asked.samples if s.confidence is not None]
        if with_logprobs:
            if all(s.plausible for s in with_logprobs):
                return LOGPROBS, "logprobs_of_answer"
            self.probe_p = min(s.confidence or 0.0 for s in with_logprobs)
            return fallback, "logprobs_before_grammar"
        if not any(s.has_logprobs for s in asked.samples):
            return fallback, "no_logprobs"
        return None

    # -- a run -----------------------------------------------------------------------------

    def _prepare(self, request: LabelRequest) -> None:
        self.finals = dict(request.finals)
        self.order = prompt.few_shot_order(self.finals, self.rater.seed or 0)
        # FEW_SHOT + 1: an issue that is itself an example is given the next one instead.
        self.shot_texts = request.fetch_texts(self.order[: FEW_SHOT + 1])
        self.details = self.rater.prompt_details
        self.system = prompt.system_message(request.guideline, request.taxonomy, self.details)
        self.code_list = prompt.codes_allowed(request.taxonomy)
        self.codes = set(self.code_list)
        self.taxonomy_version = request.taxonomy_version
        self.guideline = request.guideline
        self.refused = {}
        self.parameters = {
            "model": self.rater.model,
            "temperature": self.rater.temperature,
            "seed": self.rater.seed,
            "max_tokens": self.rater.max_tokens,
            "samples": self.rater.samples,
            "prompt_details": self.details,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }

    def _check_model(self, client: openai.OpenAI) -> dict[str, Any]:
        listed, why = self.listed_models(client)
        if listed is not None and not model_listed(self.rater.model, listed):
            raise BackendError(
                f"llm: configuration error: the endpoint does not serve {self.rater.model!r}: "
                f"GET /models lists {', '.join(listed) or 'none'} (a server may answer any "
                "model name with the one it has loaded)"
            )
        found: dict[str, Any] = {"models_listed": listed}
        if why:
            found["models_not_listed_why"] = why
        return found

    def label(self, request: LabelRequest) -> Iterator[Prediction]:
        self._prepare(request)
        client = self.client()
        concurrency = max(1, settings.MODEL_API_CONCURRENCY)
        items = iter(request.items)
        done = 0
        streak: list[Exception] = []  # the issues in a row without an answer
        skipped: list[Exception] = []
        served: set[str] = set()
        implausible = 0
        endpoint: dict[str, Any] = {}
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="llm-rater")
        pending: set[Future[Asked]] = set()

        def settle(future: Future[Asked]) -> Asked | None:
            """The answers of a finished request, or None for an issue skipped."""
            try:
                asked = future.result()
            except (NoAnswer, Refused) as exc:
                skipped.append(exc)
                streak.append(exc)
                if len(streak) >= MAX_FAILURES_IN_A_ROW:
                    raise BackendError(self._stopped(streak)) from None
                return None
            except (openai.APIError, HostRefused) as exc:
                raise self.fatal(exc) from None
            streak.clear()
            return asked

        def label_of(asked: Asked) -> Prediction:
            nonlocal implausible
            prediction = self.predict(asked)
            if prediction.model:
                served.add(prediction.model)
            implausible += bool(prediction.parameters.get("logprobs_implausible"))
            return prediction

        def record(**extra: Any) -> None:
            endpoint.update(extra)
            request.record(
                {
                    "output_format": self.form or "",
                    "served_model": ", ".join(sorted(served))[:200],
                    "confidence_from": self.confidence_from or "",
                    "endpoint": {
                        **endpoint,
                        "refused": self.refused,
                        "served_models": sorted(served),
                        "logprobs_implausible": implausible,
                    },
                }
            )

        def fill() -> None:
            assert self.form is not None
            while len(pending) < 2 * concurrency:
                item = next(items, None)
                if item is None:
                    return
                pending.add(pool.submit(self.ask, client, item, self.form, self.confidence_from))

        try:
            try:
                endpoint.update(self._check_model(client))
            except (openai.APIError, HostRefused) as exc:
                raise self.fatal(exc) from None
            # The probe: one issue at a time until the form of output and the confidence's
            # source are known (the first issue that answers, and the first valid code).
            probed = 0
            while self.form is None or self.confidence_from is None:
                item = next(items, None)
                if item is None:
                    break
                if self.form is None:
                    asked = settle(pool.submit(self.probe, client, item))
                else:
                    asked = settle(pool.submit(self.ask, client, item, self.form, None))
                if asked is None:
                    continue
                probed += 1
                decided = self.decide(asked)
                if decided is None and probed >= PROBE_ISSUES:
                    decided = (SAMPLES if self.rater.samples > 1 else NONE, "no_valid_answer")
                if decided is not None:
                    self.confidence_from, endpoint["confidence_why"] = decided
                    if self.probe_p is not None:
                        endpoint["probe_logprob_confidence"] = self.probe_p
                    record()
                done += 1
                yield label_of(asked)
                request.progress(done)
            if self.form is not None:
                record()
                fill()
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    pending.discard(future)
                    asked = settle(future)
                    if asked is None:
                        continue
                    done += 1
                    yield label_of(asked)
                    request.progress(done)
                fill()
        except BackendError:
            record()
            raise
        finally:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            client.close()
        record()
        if skipped:
            raise BackendError(self._skipped(skipped))

    def _stopped(self, streak: list[Exception]) -> str:
        n = len(streak)
        failures = [getattr(exc, "failure", None) for exc in streak]
        if all(isinstance(exc, Refused) for exc in streak) and len(set(failures)) == 1:
            return (
                f"llm: configuration error: {n} issues in a row were refused with the same "
                f"answer ({failures[0]}), not an outage: check the endpoint's settings and its "
                "log (a prompt longer than the model's context?); resuming will not help until "
                "that changes"
            )
        return (
            f"llm: stopped after {n} issues in a row got no answer (last: {streak[-1]}); resume "
            "the run when the endpoint is back"
        )

    def _skipped(self, skipped: list[Exception]) -> str:
        refused = [exc for exc in skipped if isinstance(exc, Refused)]
        if refused and len(refused) == len(skipped):
            return (
                f"llm: {len(refused)} issue(s) refused by the endpoint (last: "
                f"{refused[-1].failure}), the same answer twice each: not an outage; resume "
                "the run once the endpoint or the issue's text allows it"
            )
        return (
            f"llm: {len(skipped)} issue(s) got no answer (last: {skipped[-1]}); resume the run "
            "to label them"
        )
