"""The llm machine rater: any OpenAI-compatible chat-completions endpoint (vLLM, Ollama,
llama.cpp's server, hosted APIs) through the official `openai` client.

Per issue: one request with the prompt of `raters.prompt` (taxonomy, guideline, few-shot
examples from final labels, never the issue itself), `response_format` a JSON schema whose
enum is the taxonomy's codes and "FP", the rater's temperature, seed and max tokens,
`logprobs`, and `n` = the rater's `samples`. A server that returns fewer choices than asked
(`n` not honoured) is asked again until there are k samples, unless it gave log-probabilities:
then the confidence comes from them (`prompt.logprob_confidence`) and one sample is enough;
else from the agreement of the k samples (`prompt.agreement`). Every label records the served
model (`response.model`), `system_fingerprint`, the prompt hash, the parameters and the tokens
counted (`usage`, summed per run by the runner).

Failures: the client retries a 429 (honouring `retry-after`), a 5xx, a timeout and a dropped
connection with exponential back-off (`MODEL_API_MAX_RETRIES` tries, `MODEL_API_TIMEOUT`
seconds each). An issue still unanswered is skipped and the run goes on; `MAX_FAILURES_IN_A_ROW`
such issues in a row stop it; a run with skipped issues ends failed, saying how many, and
resuming it (`manage.py machine_label --resume`) asks only for the issues not labeled yet.
401, 403, 404, 400 (and any other answer the client does not retry, a redirect included) stop
the run at once with a message naming the status and the variable that holds the key.

The key: read from the environment variable the rater names (`api_key_env`), only if an admin
lists that name in MODEL_API_KEY_VARS (`raters.runs.key_variable_refused`, checked again here
before reading; an unlisted and an unset variable get the same message), sent only to
the endpoint's origin: the HTTP client follows no redirect, ignores proxy variables and .netrc
(`trust_env=False`) and refuses, before sending, any request whose URL is not on the
endpoint's scheme, host and port or not allowed by MODEL_API_HOSTS (`ingest.hosts`, the forge
hosts' rule). The key is removed from every error message the run stores, and never logged
(the client's own log filter hides the Authorization header). Requests run `MODEL_API_CONCURRENCY`
at a time in threads; the runner stores each label as it comes (`store_every = 1`).

This module imports `openai` (~2.5 s): only `raters.backends.backend_for` imports it, on use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2
import openai
from django.conf import settings

from ingest.hosts import HostRefused, same_origin
from raters import prompt
from raters.backends import BackendError, IssueText, LabelRequest, Prediction
from raters.runs import KEY_VARIABLE_REFUSED, key_variable_refused, model_url_refused

if TYPE_CHECKING:
    from raters.models import MachineRater

FEW_SHOT = 8
TOP_LOGPROBS = 1
MAX_FAILURES_IN_A_ROW = 5
# The placeholder key for a local server that needs none (the client insists on one).
NO_KEY = "none"


class NoAnswer(Exception):
    """An issue the endpoint did not answer after every retry (timeouts, 429s, 5xx)."""


@dataclass
class Sample:
    output: prompt.Output
    content: str
    confidence: float | None  # from log-probabilities, when the endpoint gave them


class LLMBackend:
    trains = False
    reads_finals = True
    store_every = 1

    def __init__(self, rater: MachineRater) -> None:
        self.rater = rater
        self.key = ""

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

    def client(self) -> openai.OpenAI:
        """The client for the rater's endpoint, refusing any request off its origin."""
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
        http = httpx2.Client(
            follow_redirects=False,
            trust_env=False,
            timeout=settings.MODEL_API_TIMEOUT,
            limits=httpx2.Limits(max_connections=concurrency),
            event_hooks={"request": [guard]},
        )
        return openai.OpenAI(
            base_url=base,
            api_key=self.key,
            max_retries=settings.MODEL_API_MAX_RETRIES,
            timeout=settings.MODEL_API_TIMEOUT,
            http_client=http,
        )

    def served_models(self) -> list[str]:
        """The models the endpoint serves (`GET /models`), to check a rater's settings."""
        with self.client() as client:
            return [model.id for model in client.models.list()]

    def fatal(self, exc: Exception) -> BackendError:
        """The run-stopping error, in words, without the key."""
        if isinstance(exc, HostRefused):
            return BackendError(f"llm: {exc}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            variable = self.rater.api_key_env or "no variable"
            hint = {
                401: f"the endpoint refused the key (from {variable})",
                403: f"the key (from {variable}) may not use it",
                404: f"no such model or path ({self.rater.model!r} at {self.rater.api_url})",
                400: "the endpoint refused the request (schema, logprobs or a parameter)",
            }.get(status, "an answer the run cannot go on from")
            if 300 <= status < 400:
                hint = "a redirect, not followed (the key goes to the endpoint's origin only)"
            return BackendError(f"llm: {status}, {hint}: {self._secret_free(exc.message)[:300]}")
        return BackendError(f"llm: {self._secret_free(str(exc))[:300]}")

    # -- one issue -------------------------------------------------------------------------

    def _call(self, client: openai.OpenAI, messages: list[dict[str, str]], n: int) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.rater.model,
            "messages": messages,
            "temperature": self.rater.temperature,
            "max_tokens": self.rater.max_tokens,
            "response_format": self.schema,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        if self.rater.seed is not None:
            kwargs["seed"] = self.rater.seed
        if n > 1:
            kwargs["n"] = n
        try:
            return client.chat.completions.create(**kwargs)
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise NoAnswer(type(exc).__name__) from exc
        except (openai.RateLimitError, openai.InternalServerError) as exc:
            raise NoAnswer(
                f"{exc.status_code} after {settings.MODEL_API_MAX_RETRIES} retries"
            ) from exc

    def _sample(self, choice: Any) -> Sample:
        message = choice.message
        content = message.content or ""
        output = prompt.read_output(
            message.content, choice.finish_reason, getattr(message, "refusal", None), self.codes
        )
        confidence = None
        tokens = getattr(getattr(choice, "logprobs", None), "content", None)
        if output.code is not None and tokens:
            confidence = prompt.logprob_confidence(
                content, [(t.token, t.logprob) for t in tokens], output.code
            )
        if not content and getattr(message, "refusal", None):
            content = str(message.refusal)
        return Sample(output, content, confidence)

    def ask(self, client: openai.OpenAI, item: IssueText) -> Prediction:
        """Label one issue: k samples (or one with log-probabilities), read and summed up."""
        shots = prompt.few_shot_for(self.order, item.issue_id, FEW_SHOT)
        examples = [(self.shot_texts.get(i, ""), self.finals[i]) for i in shots]
        chat = prompt.messages(self.system, examples, item.text)
        k = max(1, self.rater.samples)
        samples: list[Sample] = []
        served = fingerprint = ""
        prompt_tokens = completion_tokens = 0
        while len(samples) < k:
            response = self._call(client, chat, k - len(samples))
            served = served or response.model or ""
            fingerprint = fingerprint or (response.system_fingerprint or "")
            if response.usage is not None:
                prompt_tokens += response.usage.prompt_tokens or 0
                completion_tokens += response.usage.completion_tokens or 0
            got = [self._sample(choice) for choice in response.choices or ()]
            samples.extend(got)
            if not got or any(s.confidence is not None for s in samples):
                break  # log-probabilities: one sample is enough; no choice: nothing to wait for
        with_logprobs = [s for s in samples if s.confidence is not None]
        if with_logprobs:
            code, _ = prompt.agreement([s.output for s in samples])
            confidence = next((s.confidence for s in with_logprobs if s.output.code == code), None)
            source = "logprobs"
        else:
            code, confidence = prompt.agreement([s.output for s in samples])
            source = "agreement" if code is not None else ""
            if len(samples) < 2:  # one sample agrees with itself: that says nothing
                confidence, source = None, ""
        whys = [s.output.why for s in samples if s.output.why]
        parameters = {
            **self.parameters,
            "few_shot": shots,
            "confidence_from": source,
            "samples_received": len(samples),
        }
        if whys:
            parameters["invalid_samples"] = whys
        raw = samples[0].content if len(samples) == 1 else json.dumps([s.content for s in samples])
        return Prediction(
            issue_id=item.issue_id,
            code=code,
            confidence=confidence,
            raw_output=raw,
            prompt_hash=prompt.prompt_hash(
                self.taxonomy_version, self.guideline, shots, self.details
            ),
            model=served,
            model_version=fingerprint,
            parameters=parameters,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    # -- a run -----------------------------------------------------------------------------

    def _prepare(self, request: LabelRequest) -> None:
        self.finals = dict(request.finals)
        self.order = prompt.few_shot_order(self.finals, self.rater.seed or 0)
        # FEW_SHOT + 1: an issue that is itself an example is given the next one instead.
        self.shot_texts = request.fetch_texts(self.order[: FEW_SHOT + 1])
        self.details = self.rater.prompt_details
        self.system = prompt.system_message(request.guideline, request.taxonomy, self.details)
        codes = prompt.codes_allowed(request.taxonomy)
        self.codes = set(codes)
        self.schema = prompt.schema(codes)
        self.taxonomy_version = request.taxonomy_version
        self.guideline = request.guideline
        self.parameters = {
            "model": self.rater.model,
            "temperature": self.rater.temperature,
            "seed": self.rater.seed,
            "max_tokens": self.rater.max_tokens,
            "samples": self.rater.samples,
            "prompt_details": self.details,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
            "response_format": "json_schema",
        }

    def label(self, request: LabelRequest) -> Iterator[Prediction]:
        self._prepare(request)
        client = self.client()
        concurrency = max(1, settings.MODEL_API_CONCURRENCY)
        items = iter(request.items)
        done = skipped = in_a_row = 0
        last = ""
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="llm-rater")
        pending: set[Future[Prediction]] = set()

        def fill() -> None:
            while len(pending) < 2 * concurrency:
                item = next(items, None)
                if item is None:
                    return
                pending.add(pool.submit(self.ask, client, item))

        try:
            fill()
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    pending.discard(future)
                    try:
                        prediction = future.result()
                    except NoAnswer as exc:
                        skipped += 1
                        in_a_row += 1
                        last = str(exc)
                        if in_a_row >= MAX_FAILURES_IN_A_ROW:
                            raise BackendError(
                                f"llm: stopped after {in_a_row} issues in a row got no answer "
                                f"(last: {last}); resume the run when the endpoint is back"
                            ) from None
                        continue
                    except (openai.APIError, HostRefused) as exc:
                        raise self.fatal(exc) from None
                    in_a_row = 0
                    done += 1
                    yield prediction
                    request.progress(done)
                fill()
        finally:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            client.close()
        if skipped:
            raise BackendError(
                f"llm: {skipped} issue(s) got no answer (last: {last}); resume the run to "
                "label them"
            )
