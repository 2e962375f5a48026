"""What the llm rater asks and how it reads the answer: pure functions, no database, no network.

The prompt (`messages`): a system message with the instructions (`TEMPLATE`), the project's
guideline and the taxonomy (each node's code, name and description, and up to
`DETAILS_PER_NODE` example details only when the rater's `prompt_details` is on: details are
what annotators wrote for the study's issues, not linked to issue ids, so they cannot be left
out per issue and may describe the issue being labeled; off by default); then few-shot
examples from final labels as user / assistant turns (the assistant turn is the answer the
schema asks for); then the issue (title, body, first comments, `raters.runs.issue_texts`).
Few-shot examples are chosen once per run (`few_shot_order`: one issue per label in turn, a
seeded hash deciding which) and never include the issue being labeled (`few_shot_for` skips
it and takes the next): validation stays out of sample.

The answer is constrained by a JSON schema (`answer_schema`: `{"code": <one of the taxonomy's
codes or "FP">}`, no other key), sent in the form the endpoint accepts (`response_format`:
`json_schema`, `json_object` with the schema, or none: plain text). Whatever the form, the
output is checked against the schema (`read_output`): JSON in fences or prose, truncated output
(finish_reason "length"), another key, a code outside the taxonomy, an empty answer or a
refusal is an invalid output, kept with its reason.

Confidence (`logprob_confidence`): the probability of the code's tokens (exp of their summed
log-probabilities) where the endpoint returns them and they describe the answer given
(`plausible`: under constrained decoding a server may return the log-probabilities from before
the grammar, and a token the grammar forced can come at -17); else (`agreement`) the share of
the k samples that gave the majority code (invalid samples count against it).

`prompt_hash`: SHA-256 of the template, the taxonomy version, details on or off, the guideline
and the few-shot issue ids: two labels with the same hash were asked the same way.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from raters.backends import FP_CODE, NodeText

# Changing the wording changes every prompt hash, as it should.
TEMPLATE = """You label issue reports of deep-learning software for a research dataset.
Read the issue and answer with the one code of the taxonomy below that fits it best: a
sub-theme code (like "A.1.i") when one fits, else a theme code ("A.1"), else a type code ("A").
Answer "FP" (a false positive) when the issue is not about what the taxonomy covers.
Answer with JSON only: {"code": "<code>"}.

Guideline of the study:
{guideline}

Taxonomy (code, name, description, example details):
{taxonomy}"""
ISSUE_OPEN = "<issue>"
ISSUE_CLOSE = "</issue>"
DETAILS_PER_NODE = 5
EXAMPLE_CHARS = 2000  # each few-shot example's text is cut here: the prompt stays bounded
SCHEMA_NAME = "issue_label"
PLAUSIBLE_SHARE = 0.1  # `plausible`: a code token's least probability, times the codes' count


def taxonomy_block(nodes: Sequence[NodeText], details: bool = False) -> str:
    """The taxonomy, a line per node; its example details only with `details` (a rater's
    `prompt_details`: they are annotators' words about study issues, maybe the one labeled)."""
    lines = []
    for node in nodes:
        depth = node.code.count(".")
        line = f"{'  ' * depth}{node.code} {node.name}"
        if node.description:
            line += f": {node.description}"
        examples = [d for d in node.details if d.strip()][:DETAILS_PER_NODE] if details else []
        if examples:
            line += f" (e.g. {'; '.join(examples)})"
        lines.append(line)
    lines.append(f"{FP_CODE} false positive: not an issue the taxonomy covers")
    return "\n".join(lines)


def system_message(guideline: str, nodes: Sequence[NodeText], details: bool = False) -> str:
    return TEMPLATE.replace("{guideline}", guideline.strip() or "(none)").replace(
        "{taxonomy}", taxonomy_block(nodes, details)
    )


def issue_message(text: str, limit: int | None = None) -> str:
    return f"{ISSUE_OPEN}\n{text[:limit] if limit else text}\n{ISSUE_CLOSE}"


def answer(code: str) -> str:
    return json.dumps({"code": code})


def messages(system: str, examples: Sequence[tuple[str, str]], text: str) -> list[dict[str, str]]:
    """The chat: instructions, few-shot (text, code) pairs as turns, then the issue."""
    out = [{"role": "system", "content": system}]
    for example_text, code in examples:
        out.append({"role": "user", "content": issue_message(example_text, EXAMPLE_CHARS)})
        out.append({"role": "assistant", "content": answer(code)})
    out.append({"role": "user", "content": issue_message(text)})
    return out


def codes_allowed(nodes: Sequence[NodeText]) -> list[str]:
    return [node.code for node in nodes] + [FP_CODE]


# The forms of structured output a run tries, best first (`raters.llm` probes them once per
# run): the OpenAI form; `json_object` with a `schema` (llama-cpp-python, which enforces it by a
# grammar and refuses the first form); plain text, read against the schema all the same.
JSON_SCHEMA = "json_schema"
JSON_OBJECT_SCHEMA = "json_object+schema"
TEXT = "text"
FORMATS = (JSON_SCHEMA, JSON_OBJECT_SCHEMA, TEXT)
CONSTRAINED = (JSON_SCHEMA, JSON_OBJECT_SCHEMA)


def answer_schema(codes: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of an answer: an object with one `code` from the enum, nothing else."""
    return {
        "type": "object",
        "properties": {"code": {"type": "string", "enum": list(codes)}},
        "required": ["code"],
        "additionalProperties": False,
    }


def response_format(form: str, codes: Sequence[str]) -> dict[str, Any] | None:
    """A request's `response_format` in one of `FORMATS` (None for plain text: none sent)."""
    if form == JSON_SCHEMA:
        return {
            "type": "json_schema",
            "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": answer_schema(codes)},
        }
    if form == JSON_OBJECT_SCHEMA:
        return {"type": "json_object", "schema": answer_schema(codes)}
    if form == TEXT:
        return None
    raise ValueError(f"response format: one of {', '.join(FORMATS)}")


def schema(codes: Sequence[str]) -> dict[str, Any]:
    """The OpenAI form of the response_format (`response_format(JSON_SCHEMA, codes)`)."""
    out = response_format(JSON_SCHEMA, codes)
    assert out is not None
    return out


def _rank(seed: int, issue_id: int) -> str:
    return hashlib.sha256(f"{seed}:{issue_id}".encode()).hexdigest()


def few_shot_order(finals: Mapping[int, str], seed: int = 0) -> list[int]:
    """Final issues in the order few-shot examples are taken: one per label in turn (labels
    sorted), within a label by a seeded hash of the issue id (reruns agree)."""
    by_code: dict[str, list[int]] = {}
    for issue_id, code in finals.items():
        by_code.setdefault(code, []).append(issue_id)
    queues = [
        sorted(ids, key=lambda i: _rank(seed, i), reverse=True)
        for _, ids in sorted(by_code.items())
    ]
    out: list[int] = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop())
    return out


def few_shot_for(order: Sequence[int], issue_id: int, k: int) -> list[int]:
    """The first k examples of `order` that are not the issue being labeled."""
    return [i for i in order[: k + 1] if i != issue_id][:k]


def prompt_hash(
    taxonomy_version: int, guideline: str, few_shot_ids: Sequence[int], details: bool = False
) -> str:
    digest = hashlib.sha256(TEMPLATE.encode())
    digest.update(f"\ntaxonomy version {taxonomy_version}\n".encode())
    digest.update(f"details {'on' if details else 'off'}\n".encode())
    digest.update(guideline.encode())
    digest.update(f"\nfew-shot {','.join(str(i) for i in few_shot_ids)}".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Output:
    """One sample read: the code, or None and why it is invalid."""

    code: str | None
    why: str = ""


def read_output(
    content: str | None, finish_reason: str | None, refusal: str | None, codes: set[str]
) -> Output:
    """One choice's answer as a code, or why it is not one (strict: only the schema's JSON)."""
    if refusal:
        return Output(None, "refusal")
    if finish_reason == "length":
        return Output(None, "truncated (finish_reason length)")
    if finish_reason == "content_filter":
        return Output(None, "content filter")
    if not content or not content.strip():
        return Output(None, "empty")
    try:
        value = json.loads(content)
    except ValueError:
        return Output(None, "not JSON (fenced or prose)")
    if not isinstance(value, dict) or not isinstance(value.get("code"), str):
        return Output(None, 'no "code" string')
    if set(value) != {"code"}:  # the schema's additionalProperties: false
        others = ", ".join(sorted(str(k) for k in value if k != "code"))
        return Output(None, f"keys besides code ({others[:60]})")
    code = value["code"].strip()
    if code not in codes:
        return Output(None, f"code {code[:40]!r} outside the taxonomy")
    return Output(code)


def code_logprobs(
    content: str, tokens: Sequence[tuple[str, float]], code: str
) -> list[float] | None:
    """The log-probabilities of the tokens that spell the code's value, or None when the
    tokens do not spell the content (nothing to align them with)."""
    if not tokens or "".join(token for token, _ in tokens) != content:
        return None
    key = content.find('"code"')
    start = content.find(json.dumps(code), key + len('"code"') if key >= 0 else 0)
    if start < 0:
        return None
    start += 1  # past the opening quote
    end = start + len(code)
    out, position = [], 0
    for token, logprob in tokens:
        token_end = position + len(token)
        if token_end > start and position < end:
            out.append(logprob)
        position = token_end
    return out or None


def logprob_confidence(
    content: str, tokens: Sequence[tuple[str, float]], code: str
) -> float | None:
    """exp(sum of the log-probabilities of the tokens that spell the code's value), or None
    when the tokens do not spell the content (nothing to align them with)."""
    logprobs = code_logprobs(content, tokens, code)
    return None if logprobs is None else math.exp(sum(logprobs))


def plausible(logprobs: Sequence[float], choices: int) -> bool:
    """Whether the log-probabilities of a constrained answer's code tokens can be those of the
    distribution it was drawn from. Within the grammar, a token of the code is one of at most
    `choices` allowed ones (the codes), and the greedy choice is the most probable of them:
    under the constrained distribution its probability is at least 1 / `choices`. Below a
    tenth of that (a margin for sampling at a temperature above 0), they describe the
    distribution before the grammar (llama-cpp-python: a forced answer's tokens at -17), not
    the answer given."""
    floor = math.log(PLAUSIBLE_SHARE / max(1, choices))
    return all(logprob >= floor for logprob in logprobs)


def agreement(outputs: Sequence[Output]) -> tuple[str | None, float | None]:
    """The majority code of k samples (ties: the first given) and the share that gave it."""
    valid = [o.code for o in outputs if o.code is not None]
    if not valid:
        return None, None
    counts = Counter(valid)
    best = max(counts.values())
    code = next(c for c in valid if counts[c] == best)
    return code, best / len(outputs)
