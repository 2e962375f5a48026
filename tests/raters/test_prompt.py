"""The llm rater's prompt and reading of answers, without a server: each kind of invalid output
is named, the confidence is the probability of the code's tokens, k samples agree by majority,
and few-shot examples are spread over the labels and never the issue being labeled."""

from __future__ import annotations

import math

import pytest

from raters import prompt
from raters.backends import NodeText

CODES = {"A", "A.1", "A.1.i", "C.1", "FP"}


@pytest.mark.parametrize(
    ("content", "finish", "refusal", "why"),
    [
        ('{"code": "A.1"}', "stop", None, ""),
        ('```json\n{"code": "A.1"}\n```', "stop", None, "not JSON (fenced or prose)"),
        ('The answer is {"code": "A.1"}.', "stop", None, "not JSON (fenced or prose)"),
        ('{"code": "A.', "length", None, "truncated (finish_reason length)"),
        ('{"code": "Z.9"}', "stop", None, "code 'Z.9' outside the taxonomy"),
        ("", "stop", None, "empty"),
        (None, "stop", "I cannot help with that.", "refusal"),
        ('{"label": "A.1"}', "stop", None, 'no "code" string'),
        ('["A.1"]', "stop", None, 'no "code" string'),
        ('{"code": "A.1", "why": "logs"}', "stop", None, "keys besides code (why)"),
    ],
    ids=[
        "valid", "fenced", "prose", "truncated", "outside", "empty", "refusal", "key", "list",
        "extra-key",
    ],
)  # fmt: skip
def test_an_answer_is_a_code_or_says_why_it_is_not(content, finish, refusal, why):
    output = prompt.read_output(content, finish, refusal, CODES)
    assert output.why == why
    assert output.code == ("A.1" if not why else None)


def test_the_confidence_is_the_product_of_the_code_tokens_probabilities():
    content = '{"code": "C.1"}'
    tokens = [('{"', 0.0), ("code", 0.0), ('":', 0.0), (' "', 0.0), ("C", math.log(0.5)),
              (".", 0.0), ("1", math.log(0.8)), ('"}', math.log(0.99))]  # fmt: skip
    assert prompt.logprob_confidence(content, tokens, "C.1") == pytest.approx(0.4)
    # Tokens that do not spell the content cannot be aligned: no confidence.
    assert prompt.logprob_confidence(content, tokens[:-1], "C.1") is None


def test_k_samples_agree_by_majority_and_invalid_samples_count_against():
    ok = prompt.Output
    code, share = prompt.agreement([ok("A.1"), ok(None, "empty"), ok("A.1"), ok("C.1")])
    assert (code, share) == ("A.1", 0.5)
    assert prompt.agreement([ok(None, "empty")]) == (None, None)


def test_few_shot_examples_cover_every_label_and_skip_the_issue_being_labeled():
    finals = {1: "A.1", 2: "A.1", 3: "C.1", 4: "C.1", 5: "FP", 6: "FP"}
    order = prompt.few_shot_order(finals, seed=3)
    assert sorted(order) == [1, 2, 3, 4, 5, 6]
    assert {finals[i] for i in order[:3]} == {"A.1", "C.1", "FP"}
    assert prompt.few_shot_order(finals, seed=3) == order  # reruns agree
    first = order[0]
    assert prompt.few_shot_for(order, first, 3) == order[1:4]
    assert prompt.few_shot_for(order, 99, 3) == order[:3]


def test_the_prompt_shows_the_guideline_the_taxonomy_and_the_examples():
    nodes = [
        NodeText("A", "Installation", "Getting it installed"),
        NodeText("A.1", "Versions", "Mismatched versions", ("cuda 11 vs 12", "torch pin")),
    ]
    system = prompt.system_message("Label the cause.", nodes, details=True)
    assert "Label the cause." in system
    assert "  A.1 Versions: Mismatched versions (e.g. cuda 11 vs 12; torch pin)" in system
    # Off by default: the details are annotators' words about study issues.
    plain = prompt.system_message("Label the cause.", nodes)
    assert "  A.1 Versions: Mismatched versions\n" in plain
    assert "cuda 11" not in plain and "torch pin" not in plain
    chat = prompt.messages(system, [("Example title\nbody", "A.1")], "Issue title\nbody")
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[2]["content"] == '{"code": "A.1"}'
    assert chat[-1]["content"] == "<issue>\nIssue title\nbody\n</issue>"
    enum = prompt.schema(prompt.codes_allowed(nodes))["json_schema"]["schema"]["properties"]
    assert enum["code"]["enum"] == ["A", "A.1", "FP"]
    # The hash changes with the few-shot set, the guideline and the taxonomy version.
    base = prompt.prompt_hash(1, "g", [1, 2])
    assert len({base, prompt.prompt_hash(1, "g", [1, 3]), prompt.prompt_hash(2, "g", [1, 2]),
                prompt.prompt_hash(1, "h", [1, 2])}) == 4  # fmt: skip


def test_the_prompt_hash_tells_a_prompt_with_details_from_one_without():
    assert prompt.prompt_hash(1, "g", [1, 2], details=True) != prompt.prompt_hash(1, "g", [1, 2])
    assert prompt.prompt_hash(1, "g", [1, 2]) == prompt.prompt_hash(1, "g", [1, 2], details=False)


def test_the_three_forms_of_output_carry_one_schema_and_plain_text_carries_none():
    codes = ["A", "A.1", "FP"]
    schema = prompt.answer_schema(codes)
    assert prompt.response_format(prompt.JSON_SCHEMA, codes) == {
        "type": "json_schema",
        "json_schema": {"name": "issue_label", "strict": True, "schema": schema},
    }
    # llama-cpp-python's form: the schema beside the type, enforced by a grammar.
    assert prompt.response_format(prompt.JSON_OBJECT_SCHEMA, codes) == {
        "type": "json_object",
        "schema": schema,
    }
    assert prompt.response_format(prompt.TEXT, codes) is None
    with pytest.raises(ValueError, match="response format"):
        prompt.response_format("grammar", codes)


@pytest.mark.parametrize(
    "content",
    ['{"code": "A.1"}', '{"code": "Z.9"}', '{"code": "A.1", "why": "x"}', '{"label": "A.1"}',
     '{"code": 1}', '["A.1"]', '{"code": "FP"}', '{}'],
)  # fmt: skip
def test_reading_an_answer_agrees_with_a_json_schema_validator(content):
    """Plain text is read against the schema: what jsonschema (an independent validator)
    accepts is exactly what read_output accepts."""
    import json

    import jsonschema

    schema = prompt.answer_schema(sorted(CODES))
    try:
        jsonschema.validate(json.loads(content), schema)
        valid = True
    except jsonschema.ValidationError:
        valid = False
    assert (prompt.read_output(content, "stop", None, CODES).code is not None) is valid


def test_log_probabilities_below_what_a_constrained_choice_allows_are_implausible():
    # Six codes: a greedy constrained choice has a probability of at least 1/6; a tenth of
    # that (1/60) is the least a token of the answer may have.
    assert prompt.plausible([math.log(0.9), math.log(0.5)], 6)
    assert prompt.plausible([math.log(1 / 59)], 6)
    assert not prompt.plausible([math.log(1 / 61)], 6)
    # llama-cpp-python's forced answer: -17 per token, before the grammar.
    assert not prompt.plausible([0.0, -17.0], 6)
    content = '{"code": "C.1"}'
    tokens = [('{"code": "', 0.0), ("C", -17.0), (".", -17.0), ("1", -17.0), ('"}', 0.0)]
    assert prompt.code_logprobs(content, tokens, "C.1") == [-17.0, -17.0, -17.0]
    assert prompt.logprob_confidence(content, tokens, "C.1") == pytest.approx(math.exp(-51))
