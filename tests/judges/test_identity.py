"""Which model answered, the verdict count pinned by the schema, and "cost unknown": over
HTTP against the test judge (``tests/helpers/judge_server.py``), through the real ``openai`` SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, sample_labels
from helpers import mlflow_runs
from helpers.judge import judge, listwise, pointwise, sample, score
from helpers.judge_server import JudgeServer

from harness.core.errors import ConfigError
from harness.core.types import JudgeRequest
from harness.judges.identity import Identity, is_local, unpriced
from harness.judges.openai_chat import OpenAIJudge
from harness.judges.replies.schemas import schema
from harness.report import per_second
from harness.run.loop import significant

CHUNKS = {"Paris has the tower.": 1, "Berlin has a gate.": 0, "Rome has a forum.": 0,
          "The tower is iron.": 1, "Madrid is in Spain.": 0}
LLAMA_PROPS = {"model_path": "/models/qwen-1.5b-q4.gguf", "total_slots": 4,
               "model_alias": "qwen-1.5b-q4.gguf"}


def bodies(server: JudgeServer) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests if r["body"] is not None]


def verdicts_schema(body: dict[str, Any]) -> dict[str, Any]:
    schema_ = body["response_format"]["json_schema"]["schema"]
    return schema_["properties"]["verdicts"]  # type: ignore[no-any-return]


def warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("warning: judge.model=")]


# -- the verdict count pinned by the schema --------------------------------------------------


def test_listwise_requests_pin_the_count_to_the_chunks() -> None:
    chunks = list(CHUNKS)
    samples = [sample(chunks[:3], "three"), sample(chunks, "five"), sample(chunks[:1], "one")]
    with JudgeServer(CHUNKS) as server:
        results = score(listwise(server, include_reason=True), samples)
        sent = bodies(server)
    assert [r.verdicts for r in results] == [[1, 0, 0], [1, 0, 0, 1, 0], [1]]
    listed = [b for b in sent if b["response_format"]["json_schema"]["name"] == "listwise_verdict"]
    counts = sorted(json.dumps(b["messages"]).count("<context index=") for b in listed)
    assert counts == [1, 3, 5]
    for body in listed:
        n = json.dumps(body["messages"]).count("<context index=")
        verdicts = verdicts_schema(body)
        assert (verdicts["minItems"], verdicts["maxItems"]) == (n, n)
        assert verdicts["items"]["properties"]["verdict"]["enum"] == ["yes", "no"]
        assert body["response_format"]["json_schema"]["strict"] is True
    reasons = [b for b in sent if b["response_format"]["json_schema"]["name"] == "reason_verdict"]
    assert len(reasons) == 3 and all("verdicts" not in json.dumps(b["response_format"])
                                     for b in reasons)


def test_pointwise_verdicts_are_an_enum() -> None:
    with JudgeServer(CHUNKS) as server:
        score(pointwise(server), [sample(list(CHUNKS)[:2])])
        sent = bodies(server)
    assert len(sent) == 2
    for body in sent:
        props = body["response_format"]["json_schema"]["schema"]["properties"]
        assert props["verdict"] == {"type": "integer", "enum": [0, 1]}


def test_a_server_that_honours_the_count_never_miscounts() -> None:
    chunks = list(CHUNKS)
    samples = [sample(chunks[i:] + chunks[:i], f"s{i}") for i in range(4)]
    with JudgeServer(CHUNKS, count_mismatch=1.0, obey_schema_count=True) as server:
        results = score(listwise(server, include_reason=False), samples)
        assert server.stats.mismatches == 0 and server.stats.ok == 4
        assert server.stats.requests == 4  # one request per sample: nothing re-asked
    assert all(r.error is None and len(r.verdicts or []) == 5 for r in results)


def test_json_object_schema_pins_the_count_beside_the_type() -> None:
    """llama-cpp-python refuses json_schema (HTTP 500) but constrains a json_object reply to
    a schema given beside the type: json_object_schema sends that, count and enums included."""
    with JudgeServer(CHUNKS, count_mismatch=1.0, obey_schema_count=True,
                     reject_formats=["json_schema"]) as server:
        metric = listwise(server, include_reason=False,
                          judge={"output_mode": "json_object_schema", "parse_retries": 1})
        [result] = score(metric, [sample(list(CHUNKS)[:3])])
        [body] = [r["body"] for r in server.requests]
    assert result.error is None and len(result.verdicts or []) == 3
    fmt = body["response_format"]
    assert fmt["type"] == "json_object" and "json_schema" not in fmt
    verdicts = fmt["schema"]["properties"]["verdicts"]
    assert verdicts["minItems"] == verdicts["maxItems"] == 3
    assert verdicts["items"]["properties"]["verdict"]["enum"] == ["yes", "no"]


def test_without_a_schema_a_miscount_is_still_reasked() -> None:
    with JudgeServer(CHUNKS, count_mismatch=1.0, obey_schema_count=True) as server:
        metric = listwise(server, include_reason=False,
                          judge={"output_mode": "json_object", "parse_retries": 1})
        [result] = score(metric, [sample(list(CHUNKS)[:3])])
        assert server.stats.mismatches == 2  # json_object pins nothing: asked twice
    assert result.score is None and "2 verdicts for 3 chunks" in (result.error or "")


def test_fine_tuned_openai_models_get_no_count() -> None:
    # OpenAI's strict mode rejects minItems/maxItems for fine-tuned models only
    assert "minItems" not in json.dumps(schema("listwise", 3, "ft:gpt-4o-mini:org::abc"))
    assert schema("listwise", 3, "gpt-4o-mini")["properties"]["verdicts"]["maxItems"] == 3
    assert "minItems" not in json.dumps(schema("listwise", None, "gpt-4o-mini"))


# -- the served model ------------------------------------------------------------------------


@pytest.mark.slow
def test_served_model_is_recorded_warned_and_tagged(tmp_path: Path, mlflow_store: str) -> None:
    with JudgeServer(sample_labels(), model="qwen-1.5b-q4.gguf", props=LLAMA_PROPS) as server:
        result = run_cli(
            "metric=llm_with_reference", "judge=local", f"judge.base_url={server.base_url}",
            "judge.model=gpt-4o-mini", cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store},
        )
        sent = bodies(server)
    assert result.returncode == 0, result.stderr
    assert {b["model"] for b in sent} == {"gpt-4o-mini"}  # the name asked for is still sent
    [line] = warnings(result.stderr)
    assert line == (
        f"warning: judge.model=gpt-4o-mini but {server.base_url} serves qwen-1.5b-q4.gguf "
        "(from /props); verdicts are cached under the served model qwen-1.5b-q4.gguf, and the "
        "cost is unknown"
    )
    judge_ = result.summary()["judge"]
    assert judge_["model"] == "gpt-4o-mini"
    assert judge_["served_model"] == "qwen-1.5b-q4.gguf"
    assert judge_["model_path"] == "/models/qwen-1.5b-q4.gguf"
    assert judge_["cost_usd"] is None and judge_["saved_cost_usd"] is None
    assert judge_["cost_unknown"] == "local endpoint"
    assert "gpt-4o-mini (served: qwen-1.5b-q4.gguf)" in result.stdout
    assert "cost unknown (local endpoint)" in result.stdout
    [run] = mlflow_runs.runs(mlflow_store, "harness", "tags.`judge.served_model` != ''",
                             order_by=["attributes.start_time DESC"], max_results=1)
    tags = run.data.tags
    assert tags["judge.served_model"] == "qwen-1.5b-q4.gguf"
    assert tags["judge.model_path"] == "/models/qwen-1.5b-q4.gguf"
    assert tags["judge.cost"] == "unknown (local endpoint)"
    assert "judge/cost_usd" not in run.data.metrics
    assert run.data.metrics["judge/requests"] == len(sent)


def test_slots_from_props_reach_the_transport() -> None:
    with JudgeServer(CHUNKS, model="qwen-1.5b-q4.gguf", props=LLAMA_PROPS) as server:
        j = judge(server)
        metric = pointwise(server)
        metric.judge = j
        score(metric, [sample(list(CHUNKS)[:1])])
    assert j.transport.server_slots == 4
    assert j.describe()["served_model"] == "qwen-1.5b-q4.gguf"


def _run_twice(tmp_path: Path, first: dict[str, Any], second: dict[str, Any],
               model: str = "test-judge") -> tuple[int, int, int]:
    """Requests of a run against a server with knobs ``first``, then of two runs with
    ``second``, all sharing one verdict cache."""
    cache = str(tmp_path / "verdicts.sqlite")
    counts = []
    with JudgeServer(CHUNKS, model=model) as server:
        for knobs in (first, second, second):
            server.configure(**knobs)
            server.reset_stats()
            metric = pointwise(server, judge={"cache_path": cache})
            [result] = score(metric, [sample(list(CHUNKS)[:3])])
            assert result.verdicts == [1, 0, 0]
            counts.append(server.stats.requests)
    return counts[0], counts[1], counts[2]


def test_new_weights_under_the_same_llama_cpp_name_are_asked_again(tmp_path: Path) -> None:
    again = {**LLAMA_PROPS, "model_path": "/models/other-7b.gguf"}
    assert _run_twice(tmp_path, {"props": LLAMA_PROPS}, {"props": again},
                      model="qwen-1.5b-q4.gguf") == (3, 3, 0)


def test_a_new_ollama_digest_under_the_same_tag_is_asked_again(tmp_path: Path) -> None:
    def tags(digest: str) -> dict[str, Any]:
        return {"ollama_tags": [{"name": "test-judge", "model": "test-judge", "digest": digest},
                                {"name": "other:7b", "model": "other:7b", "digest": "f00"}]}

    assert _run_twice(tmp_path, tags("a1b2"), tags("c3d4")) == (3, 3, 0)


def test_a_new_vllm_root_under_the_same_served_name_is_asked_again(tmp_path: Path) -> None:
    first, second = {"model_root": "Qwen/Qwen2.5-7B"}, {"model_root": "meta/Llama-3-8B"}
    assert _run_twice(tmp_path, first, second) == (3, 3, 0)


def test_the_same_server_keeps_its_cache(tmp_path: Path) -> None:
    assert _run_twice(tmp_path, {}, {}) == (3, 0, 0)  # no identity beyond the name: key as before


def test_digest_is_recorded() -> None:
    tags = [{"name": "qwen2.5:7b", "model": "qwen2.5:7b", "digest": "845dbda0ea48"}]
    with JudgeServer(CHUNKS, model="qwen2.5:7b", ollama_tags=tags) as server:
        j = OpenAIJudge("qwen2.5", base_url=server.base_url, api_key_env=None, cache=False)
        metric = pointwise(server)
        metric.judge = j
        score(metric, [sample(list(CHUNKS)[:1])])
    described = j.describe()
    assert described["digest"] == "845dbda0ea48"
    assert described["served_model"] == "qwen2.5:7b"


def test_a_reply_from_another_model_warns_once(capsys: pytest.CaptureFixture[str]) -> None:
    with JudgeServer(CHUNKS, reply_model="someone-else-8b") as server:
        metric = pointwise(server)
        score(metric, [sample(list(CHUNKS)), sample(list(CHUNKS)[:2], "b")])
        assert server.stats.ok == 7
    [line] = warnings(capsys.readouterr().err)
    assert "serves someone-else-8b (from reply)" in line
    described = metric.judge.describe()
    assert described["served_model"] == "test-judge"
    assert described["reply_models"] == ["someone-else-8b"]


def test_model_auto_is_the_one_model_listed() -> None:
    with JudgeServer(CHUNKS, model="only-model") as server:
        j = OpenAIJudge("auto", base_url=server.base_url, api_key_env=None)
        metric = pointwise(server)
        metric.judge = j
        [result] = score(metric, [sample(list(CHUNKS)[:2])])
        sent = bodies(server)
    assert result.verdicts == [1, 0]
    assert j.model == "only-model" and {b["model"] for b in sent} == {"only-model"}


def test_model_auto_without_preflight_asks_the_server_once() -> None:
    import asyncio

    from harness.judges.replies import parse

    with JudgeServer(CHUNKS, model="only-model") as server:
        j = OpenAIJudge("auto", base_url=server.base_url, api_key_env=None, cache=False)
        messages = pointwise(server).prompt.messages(
            question="Q?", answer="A.", context="Paris has the tower.")

        async def both() -> list[Any]:
            try:
                return await asyncio.gather(*(j.ask(JudgeRequest(messages, "pointwise"),
                                                    lambda c: parse.pointwise(c.content))
                                              for _ in range(2)))
            finally:
                await j.aclose()

        verdicts = asyncio.run(both())
        assert [v[0] for v in verdicts] == [1, 1] and j.model == "only-model"


@pytest.mark.parametrize(("models", "message"), [
    (["a-7b", "b-13b"], "judge.model=auto: {url} serves 2 models (a-7b, b-13b); set judge.model "
                        "to one of them"),
])
def test_model_auto_with_several_models_says_which(
    tmp_path: Path, models: list[str], message: str
) -> None:
    with JudgeServer(CHUNKS, models=models) as server:
        result = run_cli("metric=llm_with_reference", "judge=local", "tracking=none",
                         f"judge.base_url={server.base_url}", "judge.model=auto", cwd=tmp_path)
        assert server.stats.requests == 0
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert message.format(url=server.base_url) in result.stderr.strip().splitlines()[-1]


def test_model_auto_on_a_server_without_models() -> None:
    with JudgeServer(CHUNKS, models_endpoint="404") as server:
        j = OpenAIJudge("auto", base_url=server.base_url, api_key_env=None, cache=False)
        metric = pointwise(server)
        metric.judge = j
        with pytest.raises(ConfigError, match=r"^judge.model=auto: .* lists no model"):
            score(metric, [sample(list(CHUNKS)[:1])])


# -- cost ------------------------------------------------------------------------------------

PRICES = {"gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.60}}
OPENAI = "https://api.openai.com/v1"


@pytest.mark.parametrize(("model", "url", "ident", "why"), [
    ("gpt-4o-mini", OPENAI, Identity(("gpt-4o-mini",), "gpt-4o-mini"), None),
    ("gpt-4o-mini", None, Identity(), None),
    ("gpt-4o-mini", OPENAI, Identity(replied={"gpt-4o-mini-2024-07-18"}), None),
    ("gpt-5-nano", OPENAI, Identity(), "no price for gpt-5-nano in judge.prices"),
    ("gpt-4o-mini", "http://127.0.0.1:8080/v1", Identity(), "local endpoint"),
    ("gpt-4o-mini", "http://localhost:11434/v1", Identity(), "local endpoint"),
    ("gpt-4o-mini", "http://192.168.1.20:8000/v1", Identity(), "local endpoint"),
    ("gpt-4o-mini", "http://10.0.0.7/v1", Identity(), "local endpoint"),
    ("gpt-4o-mini", "http://[::1]:8000/v1", Identity(), "local endpoint"),
    ("gpt-4o-mini", "https://proxy.example.com/v1", Identity(("qwen",), "qwen"),
     "the server serves qwen, not the priced gpt-4o-mini"),
    ("gpt-4o-mini", "https://proxy.example.com/v1", Identity(replied={"llama-3"}),
     "the server serves llama-3, not the priced gpt-4o-mini"),
    ("gpt-4o-mini", OPENAI, Identity(("gpt-4o-mini",), "gpt-4o-mini", model_path="/w/qwen"),
     "the server serves /w/qwen, not the priced gpt-4o-mini"),
])
def test_what_can_be_priced(model: str, url: str | None, ident: Identity, why: str | None) -> None:
    assert unpriced(model, PRICES, url, ident) == why


def test_local_hosts() -> None:
    assert [is_local(u) for u in ("http://localhost:1/v1", "http://172.20.0.3/v1",
                                  "http://api.openai.com/v1", "http://8.8.8.8/v1", None)] == [
        True, True, False, False, False]


def test_a_priced_model_on_openai_keeps_its_estimate() -> None:
    j = OpenAIJudge("gpt-4o-mini", base_url=OPENAI, api_key_env=None, prices=PRICES, cache=False)
    j.transport.charge(1_000_000, 200_000, 100_000)
    j.transport.charge(10, 0, 10, saved=True)
    assert j.stats.cost_usd == pytest.approx(0.8 * 0.15 + 0.2 * 0.075 + 0.1 * 0.60)
    assert j.stats.saved_cost_usd == pytest.approx((10 * 0.15 + 10 * 0.60) / 1e6)
    assert "cost_unknown" not in j.describe()


def test_an_unknown_model_costs_unknown() -> None:
    j = OpenAIJudge("mystery-1", base_url=OPENAI, api_key_env=None, prices=PRICES, cache=False)
    j.transport.charge(1000, 0, 1000)
    assert j.stats.cost_usd is None and j.stats.as_dict()["cost_usd"] is None
    assert j.describe()["cost_unknown"] == "no price for mystery-1 in judge.prices"


def test_cost_unknown_on_the_console_and_null_in_the_summary(tmp_path: Path) -> None:
    with JudgeServer(sample_labels()) as server:
        result = run_cli(
            "metric=contextual_precision", "judge=local", f"judge.base_url={server.base_url}",
            "judge.model=test-judge", "tracking=none", "run.limit=4", cwd=tmp_path,
        )
    assert result.returncode == 0, result.stderr
    judge_ = result.summary()["judge"]
    assert judge_["cost_usd"] is None and judge_["cost_unknown"] == "local endpoint"
    assert judge_["served_model"] == "test-judge" and "model_path" not in judge_
    [line] = [ln for ln in result.stdout.splitlines() if ln.strip().startswith("judge ")
              and not ln.strip().startswith("judge bill")]
    assert line.endswith("completion tokens, cost unknown (local endpoint)")
    [bill] = [ln for ln in result.stdout.splitlines() if ln.strip().startswith("judge bill")]
    assert "USD" not in bill and "$" not in bill  # a local endpoint: tokens, no dollars
    assert warnings(result.stderr) == []
    rate = result.summary()["samples_per_s"]
    assert rate > 0 and rate == significant(rate)


# -- samples per second ----------------------------------------------------------------------


@pytest.mark.parametrize(("rate", "rounded", "shown"), [
    (0.08765, 0.0877, "0.0877"), (2.345, 2.35, "2.35"), (45.67, 45.7, "45.7"),
    (12345.6, 12346.0, "12,346"), (0.0, 0.0, "0"),
])
def test_rates_keep_three_significant_figures(rate: float, rounded: float, shown: str) -> None:
    assert significant(rate) == pytest.approx(rounded, abs=0)
    assert per_second(significant(rate)) == shown
