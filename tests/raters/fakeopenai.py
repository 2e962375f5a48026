"""A fake OpenAI-compatible chat-completions server: real HTTP on 127.0.0.1, in a thread.

It answers as /work/shared/reference/model-apis.md describes the servers do: `POST
/v1/chat/completions` with choices, `usage`, the served model and `system_fingerprint`,
log-probabilities on or off, `n` honoured or not; `GET /v1/models`; and the ways they fail:
answers with a wrong code at a set error rate, invalid outputs (prose, fenced JSON, truncated
with finish_reason "length", a code outside the taxonomy, empty, a refusal), 429 with
retry-after, 500s, dropped connections, answers slower than the client waits, 401 for a wrong
key (whose message echoes the key, as hosted APIs do), redirects. Every request is recorded
(method, path, headers, body) for the tests to read.

Dialects (the spec's "Dialects observed on a real server"): which `response_format` types it
accepts (`accepts`) and how it refuses the others (`refusal_status`: 400 with an
`invalid_request_error`, or llama-cpp-python's HTTP 500 `internal_server_error` whose message
is a validation error naming `response_format.type`); `json_object` without a schema gives
unconstrained JSON until max_tokens; log-probabilities of the distribution before the grammar
(`logprobs_before_grammar`: a forced code's tokens at `grammar_logprob` each); a server that
accepts any model name, serves its loaded one and echoes the name asked (`echo_model`), lists
what is really loaded on `GET /models` (`models`; `list_models=False`: 404 there), and
serves one request at a time (`serial`). `FakeOpenAI.llama_cpp_python()` is that server as
measured (llama-cpp-python 0.3.36).

It reads the issue's title as the rater's prompt writes it: the first line after "<issue>" in
the last user message (`raters.prompt.issue_message`).
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

INVALID = {
    "prose": 'The code is {"code": "%s"} I think.',
    "fenced": '```json\n{"code": "%s"}\n```',
    "truncated": '{"code": "%s',
    "outside": '{"code": "Z.9"}',
    "empty": "",
    "extra_key": '{"code": "%s", "because": "the logs say so"}',
}


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    title: str = ""
    at: float = 0.0  # time.monotonic() on arrival


@dataclass
class FakeOpenAI:
    answers: dict[str, str] = field(default_factory=dict)  # title -> code
    # Per title, the codes successive samples give (cycled); default: the answer alone.
    samples: dict[str, list[str]] = field(default_factory=dict)
    # Per title, an invalid output: a key of INVALID, or "refusal".
    invalid: dict[str, str] = field(default_factory=dict)
    invalid_rate: float = 0.0  # besides: this share of answers invalid, of a random kind
    error_rate: float = 0.0  # this share of answers give another code of `answers`
    probability: float = 0.9  # what the log-probabilities of a code's tokens multiply to
    logprobs: bool = True
    honour_n: bool = True
    key: str | None = None  # the key it accepts (401 for another); None: any
    status: int | None = None  # answer every request with this error status
    rate_limited: int = 0  # the first N chat requests get 429 with retry-after
    retry_after: str = "1"
    server_errors: int = 0  # the next N get 500
    # Their message: None names each request (a hosted API's outage: no two alike); a text
    # is the same every time (an outage that says the same twice).
    server_error_message: str | None = None
    dropped: int = 0  # the next N get the connection closed without an answer
    slow: dict[str, float] = field(default_factory=dict)  # title -> seconds before answering
    delay: float = 0.0  # seconds before every answer (a busy server), for benchmarks
    redirect_to: str | None = None  # answer 307 to this URL
    served_model: str = "fake-llm-7b-served"
    fingerprint: str | None = "fp_fake_1"
    # What GET /models lists (None: the served model); list_models False: 404 there.
    models: list[str] | None = field(default_factory=lambda: ["fake-llm-7b"])
    list_models: bool = True
    echo_model: bool = False  # response.model is the name asked (llama-cpp-python)
    # The response_format types it accepts ("text": none given, or {"type": "text"}).
    accepts: tuple[str, ...] = ("json_schema", "json_object", "text")
    refusal_status: int = 400  # how it refuses another type (500: llama-cpp-python)
    # Log-probabilities of the distribution before the grammar: a constrained answer's code
    # tokens come at `grammar_logprob` each (a forced answer the model did not prefer).
    logprobs_before_grammar: bool = False
    grammar_logprob: float = -17.0
    # Per title, what it says when nothing constrains it ("text" or json_object without a
    # schema): a key of INVALID, or "json" (the default: the answer as JSON).
    unconstrained: dict[str, str] = field(default_factory=dict)
    serial: bool = False  # one request at a time, the others wait (a local CPU server)
    # Every chat request answered with this status and message (the same each time).
    refuse_everything: tuple[int, str] | None = None
    # Per title, the status and message every request about that issue gets (a prompt the
    # server cannot take, e.g. longer than its context).
    refuse_titles: dict[str, tuple[int, str]] = field(default_factory=dict)
    seed: int = 7
    requests: list[Recorded] = field(default_factory=list)
    prompt_tokens: int = 0  # what its usage reported, summed
    completion_tokens: int = 0

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.rng = random.Random(self.seed)
        self.cursor: dict[str, int] = {}
        self.chat_requests = 0
        self.server: ThreadingHTTPServer | None = None
        self.queue = threading.Lock()  # held while answering when `serial`

    @classmethod
    def llama_cpp_python(cls, model: str = "models/tiny-q8_0.gguf", **kwargs: Any) -> FakeOpenAI:
        """The server as measured: `python -m llama_cpp.server` 0.3.36 with one small model."""
        options: dict[str, Any] = {
            "accepts": ("json_object", "text"),
            "refusal_status": 500,
            "logprobs_before_grammar": True,
            "honour_n": False,
            "fingerprint": None,
            "echo_model": True,
            "served_model": model,
            "models": [model],
            "serial": True,
        }
        options.update(kwargs)
        return cls(**options)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                fake.handle(self, "GET")

            def do_POST(self) -> None:
                fake.handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        # shutdown() waits for the loop's next poll: 20 ms, not the default 0.5 s per test.
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.server_address[1]

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.host}/v1"

    def chats(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def titles_asked(self) -> list[str]:
        return [r.title for r in self.chats()]

    def formats_asked(self) -> list[str]:
        """Each chat request's response_format, as the rater sent it ("text": none)."""
        out = []
        for r in self.chats():
            rf = r.body.get("response_format") or {"type": "text"}
            out.append(rf["type"] + ("+schema" if rf.get("schema") else ""))
        return out

    # -- answering -----------------------------------------------------------------------

    def handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else {}
        title = self._title(body)
        with self.lock:
            self.requests.append(
                Recorded(
                    method,
                    h.path,
                    {k.lower(): v for k, v in h.headers.items()},
                    body,
                    title,
                    time.monotonic(),
                )
            )
        if self.redirect_to:
            return self._send(h, 307, {}, {"location": self.redirect_to})
        if self.key is not None and h.headers.get("authorization") != f"Bearer {self.key}":
            given = (h.headers.get("authorization") or "").removeprefix("Bearer ")
            return self._error(h, 401, f"Incorrect API key provided: {given}.", "invalid_api_key")
        if self.status:
            return self._error(h, self.status, f"error {self.status}", "fake_error")
        if method == "GET" and h.path.rstrip("/").endswith("/models") and self.list_models:
            return self._send(h, 200, self._models())
        if method != "POST" or not h.path.endswith("/chat/completions"):
            return self._error(h, 404, f"no route {h.path}", "not_found")
        if self.refuse_everything or title in self.refuse_titles:
            status, message = self.refuse_everything or self.refuse_titles[title]
            return self._error(h, status, message, None, kind="internal_server_error")
        refused = self._refusal(body)
        if refused:
            return refused(h)
        with self.lock:
            self.chat_requests += 1
            number = self.chat_requests
        if number <= self.rate_limited:
            return self._error(
                h,
                429,
                "Rate limit reached",
                "rate_limit_exceeded",
                {"retry-after": self.retry_after},
            )
        number -= self.rate_limited
        if number <= self.server_errors:
            # A hosted API's outage: the message names the request, so no two are the same.
            message = self.server_error_message or (
                f"The server had an error processing your request (request id req_{number})"
            )
            return self._error(h, 500, message, "server_error")
        number -= self.server_errors
        if number <= self.dropped:
            h.close_connection = True
            h.connection.shutdown(2)
            return None
        if self.serial:
            with self.queue:  # the others wait in the server's queue
                return self._answer(h, body, title)
        return self._answer(h, body, title)

    def _answer(self, h: BaseHTTPRequestHandler, body: dict[str, Any], title: str) -> None:
        if title in self.slow or self.delay:
            time.sleep(self.slow.get(title, self.delay))
        return self._send(h, 200, self._completion(body, title))

    def _format(self, body: dict[str, Any]) -> str:
        """The request's response_format type ("text" when none is given)."""
        rf = body.get("response_format")
        return str(rf.get("type")) if isinstance(rf, dict) else "text"

    def _refusal(self, body: dict[str, Any]) -> Any:
        """How the server refuses a response_format type it does not accept (None: accepted)."""
        kind = self._format(body)
        if kind in self.accepts:
            return None
        if self.refusal_status == 500:
            # llama-cpp-python: its request model's validation error, as an internal error.
            message = (
                "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
                "  Input should be 'text' or 'json_object' [type=literal_error, "
                f"input_value='{kind}', input_type=str]"
            )
            return lambda h: self._error(h, 500, message, None, kind="internal_server_error")
        message = f"response_format type {kind!r} is not supported by this server"
        return lambda h: self._error(h, self.refusal_status, message, None, param="response_format")

    def _title(self, body: dict[str, Any]) -> str:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        if not users:
            return ""
        match = re.search(r"<issue>\n(.*)", users[-1].get("content", ""))
        return match.group(1).strip() if match else ""

    def _models(self) -> dict[str, Any]:
        ids = self.models if self.models is not None else [self.served_model]
        return {
            "object": "list",
            "data": [{"id": i, "object": "model", "owned_by": "fake"} for i in ids],
        }

    def _code(self, title: str) -> str:
        with self.lock:
            options = self.samples.get(title) or [self.answers.get(title, "FP")]
            i = self.cursor.get(title, 0)
            self.cursor[title] = i + 1
            code = options[i % len(options)]
            if self.error_rate and self.rng.random() < self.error_rate:
                others = sorted(set(self.answers.values()) - {code}) or ["FP"]
                code = self.rng.choice(others)
        return code

    def _choice(self, index: int, title: str, max_tokens: int, body: dict[str, Any]) -> dict:
        code = self._code(title)
        kind = self.invalid.get(title)
        rf = body.get("response_format") if isinstance(body.get("response_format"), dict) else {}
        form = self._format(body)
        constrained = form == "json_schema" or (form == "json_object" and bool(rf.get("schema")))
        if not constrained and kind is None:
            said = self.unconstrained.get(title, "json")
            kind = None if said == "json" else said
            if form == "json_object":  # no schema: JSON that never ends (until max_tokens)
                kind = "runaway"
        if kind is None and self.invalid_rate:
            with self.lock:
                if self.rng.random() < self.invalid_rate:
                    kind = self.rng.choice([*INVALID, "refusal"])
        finish = "stop"
        refusal = None
        if kind == "refusal":
            content: str | None = None
            refusal = "I can't help with labeling this."
        elif kind == "runaway":
            content = '{"code": "' + code + '", "reasons": ["' + "and so on " * max_tokens
            finish = "length"
        elif kind is not None:
            template = INVALID[kind]
            content = template % code if "%s" in template else template
            if kind == "truncated":
                finish = "length"
        else:
            content = json.dumps({"code": code})
        tokens = re.findall(r"\w+|\W", content or "")
        if len(tokens) > max_tokens:
            tokens, finish = tokens[:max_tokens], "length"
            content = "".join(tokens)
        logprobs = None
        if self.logprobs and content:
            forced = constrained and self.logprobs_before_grammar
            logprobs = {"content": self._logprobs(content, tokens, code, forced)}
        return {
            "index": index,
            "message": {"role": "assistant", "content": content, "refusal": refusal},
            "finish_reason": finish,
            "logprobs": logprobs,
            "_tokens": len(tokens),
        }

    def _logprobs(
        self, content: str, tokens: list[str], code: str, forced: bool = False
    ) -> list[dict[str, Any]]:
        """Every token certain but the code's, whose probabilities multiply to `probability`
        (`forced`: each of the code's tokens at `grammar_logprob`, before the grammar)."""
        start = content.find(f'"{code}"') + 1 if f'"{code}"' in content else -1
        end = start + len(code)
        spans, position = [], 0
        for token in tokens:
            spans.append((position, position + len(token)))
            position += len(token)
        in_code = [i for i, (a, b) in enumerate(spans) if start >= 0 and b > start and a < end]
        share = math.log(self.probability) / len(in_code) if in_code else 0.0
        if forced:
            share = self.grammar_logprob
        return [
            {
                "token": token,
                "logprob": share if i in in_code else 0.0,
                "bytes": list(token.encode()),
                "top_logprobs": [],
            }
            for i, token in enumerate(tokens)
        ]

    def _completion(self, body: dict[str, Any], title: str) -> dict[str, Any]:
        n = int(body.get("n") or 1) if self.honour_n else 1
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 512)
        choices = [self._choice(i, title, max_tokens, body) for i in range(n)]
        prompt_tokens = sum(len(m.get("content") or "") for m in body.get("messages", [])) // 4
        completion_tokens = sum(c.pop("_tokens") for c in choices)
        with self.lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{self.chat_requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "") if self.echo_model else self.served_model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        if self.fingerprint is not None or self.echo_model:
            answer["system_fingerprint"] = self.fingerprint  # llama-cpp-python: always null
        return answer

    def _error(
        self,
        h: BaseHTTPRequestHandler,
        status: int,
        message: str,
        code: str | None,
        headers: dict[str, str] | None = None,
        kind: str = "invalid_request_error",
        param: str | None = None,
    ) -> None:
        body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
        self._send(h, status, body, headers or {})

    def _send(
        self,
        h: BaseHTTPRequestHandler,
        status: int,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(body).encode()
        try:
            h.send_response(status)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                h.send_header(name, value)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (a slow answer)
