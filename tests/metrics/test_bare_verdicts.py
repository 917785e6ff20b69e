"""Prompts with ``reasons: false`` ask for verdicts only (a reply schema without ``reason``):
fewer output tokens, the same verdicts scored the same way."""

from __future__ import annotations

import json

import pytest
import yaml
from helpers.judge import judge, prompt, sample, score
from helpers.paths import CONF
from helpers.ranking_table import TABLE

from harness.core.errors import ConfigError
from harness.metrics.contextual_precision import ContextualPrecision
from harness.metrics.llm import LLMContextPrecision
from harness.prompts.template import PromptFile, PromptTemplate


def table_samples(server):
    samples = []
    for i, (verdicts, _, _) in enumerate(TABLE):
        if not verdicts:
            continue
        chunks = [f"row {i} chunk {k}" for k in range(len(verdicts))]
        server.labels.update(dict(zip(chunks, verdicts, strict=True)))
        samples.append(sample(chunks, str(i)))
    return samples


def reply_schema(body: dict) -> dict:
    return body["response_format"]["json_schema"]["schema"]


def test_the_verdicts_only_listwise_prompt_scores_as_deepeval(judge_server):
    metric = ContextualPrecision("contextual_precision", judge(judge_server),
                                 prompt("contextual_precision_verdicts"), include_reason=False)
    results = score(metric, table_samples(judge_server))
    rows = [row for row in TABLE if row[0]]
    for (verdicts, _, deepeval), result in zip(rows, results, strict=True):
        assert result.verdicts == verdicts
        if deepeval is not None:
            assert float(result.score) == float(deepeval)
        assert "reasons" not in result.details
    for request in judge_server.requests:
        schema = reply_schema(request["body"])
        assert "reason" not in json.dumps(schema)
        items = schema["properties"]["verdicts"]
        n = request["body"]["messages"][-1]["content"].count("<context index=")
        assert items["minItems"] == items["maxItems"] == n  # still pinned


def test_verdicts_only_and_todays_listwise_prompt_score_alike(judge_server):
    samples = table_samples(judge_server)
    bare = score(ContextualPrecision("contextual_precision", judge(judge_server),
                                     prompt("contextual_precision_verdicts")), samples)
    full = score(ContextualPrecision("contextual_precision", judge(judge_server),
                                     prompt("contextual_precision")), samples)
    assert [r.score for r in bare] == [r.score for r in full]
    assert [r.details["success"] for r in bare] == [r.details["success"] for r in full]
    assert all(r.details["reason"] for r in bare)  # include_reason still explains the score
    # the explanation call lists the verdicts without reasons
    reason_calls = [r["body"]["messages"][-1]["content"] for r in judge_server.requests
                    if "<verdicts>" in r["body"]["messages"][-1]["content"]]
    assert any("1. yes\n" in text or "1. no\n" in text for text in reason_calls)


def pointwise_bare(tmp_path) -> PromptTemplate:
    data = yaml.safe_load((CONF / "prompt" / "llm_with_reference.yaml").read_text("utf-8"))
    data.pop("_target_")
    data.update(version="pointwise_bare_test", reasons=False,
                examples=[{**e, "output": {"verdict": e["output"]["verdict"]}}
                          for e in data["examples"]])
    path = tmp_path / "bare.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    return PromptFile(str(path))


def test_a_verdicts_only_pointwise_prompt_scores_as_ragas(judge_server, tmp_path):
    metric = LLMContextPrecision("llm_with_reference", judge(judge_server),
                                 pointwise_bare(tmp_path))
    results = score(metric, table_samples(judge_server))
    rows = [row for row in TABLE if row[0]]
    for (verdicts, ragas, _), result in zip(rows, results, strict=True):
        assert result.verdicts == verdicts and repr(result.score) == ragas
        assert "reasons" not in result.details
    schemas = {json.dumps(reply_schema(r["body"])) for r in judge_server.requests}
    assert [json.loads(s) for s in schemas] == [{
        "type": "object", "properties": {"verdict": {"type": "integer", "enum": [0, 1]}},
        "required": ["verdict"], "additionalProperties": False}]


def test_todays_prompts_still_ask_for_a_reason_with_each_verdict(judge_server):
    judge_server.labels.update({"a": 1, "b": 0})
    score(LLMContextPrecision("llm_with_reference", judge(judge_server),
                              prompt("llm_with_reference")), [sample(["a", "b"])])
    score(ContextualPrecision("contextual_precision", judge(judge_server),
                              prompt("contextual_precision"), include_reason=False),
          [sample(["a", "b"])])
    for request in judge_server.requests:
        assert '"reason"' in json.dumps(reply_schema(request["body"]))


@pytest.mark.parametrize("option", ["contextual_precision", "contextual_precision_verdicts"])
def test_the_fixture_judge_answers_either_reply(option, tmp_path):
    from harness import evaluate

    chunks = ["The Eiffel Tower is located in Paris.", "Berlin has a gate."]
    result = evaluate([{"user_input": "Where is the Eiffel Tower located?",
                        "reference": "The Eiffel Tower is located in Paris.",
                        "retrieved_contexts": chunks}],
                      "contextual_precision",
                      overrides=["judge=fixture", f"prompt={option}", "tracking=none"])
    assert result.scores == [1.0]
    assert ("reasons" in result.rows[0]) == (option == "contextual_precision")


@pytest.mark.parametrize("value", ["no", 0, None, "false"])
def test_reasons_must_be_true_or_false(value):
    with pytest.raises(ConfigError, match="prompt.reasons: expected true or false"):
        PromptTemplate("v", "pointwise", "s", "{{ context }}", reasons=value)


def test_a_prompt_that_asks_for_reasons_hashes_as_before_the_option():
    plain = PromptTemplate("v", "listwise", "s", "{{ contexts }}")
    asked = PromptTemplate("v", "listwise", "s", "{{ contexts }}", reasons=True)
    bare = PromptTemplate("v", "listwise", "s", "{{ contexts }}", reasons=False)
    assert plain.sha256 == asked.sha256  # verdict caches of today's prompts stay valid
    assert bare.sha256 != plain.sha256  # a bare reply is another request
    assert (plain.kind, bare.kind) == ("listwise", "listwise_bare")


def test_a_bare_prompt_written_out_reads_back_bare(tmp_path):
    bare = prompt("contextual_precision_verdicts")
    path = tmp_path / "prompt.yaml"
    path.write_text(bare.to_yaml(), "utf-8")
    again = PromptFile(str(path))
    assert again.reasons is False and again.kind == "listwise_bare"
    assert again.sha256 == bare.sha256
    assert "reasons" not in prompt("contextual_precision").to_yaml()
