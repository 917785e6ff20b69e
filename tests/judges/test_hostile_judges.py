"""Issue 12, the judge in the field: through ``python -m harness`` (in process) against the
real test judge (``tests/helpers/judge_server.py``).

* secrets: a key or URL password that a server echoes in its errors is written nowhere
  (outputs, Hydra's files, the MLflow store, the verdict cache, the console);
* counters: requests and retries are what was sent; a 401/403/404 says what to change;
* replies of other shapes give the verdict when it is there, a clear reason when not;
* settings: a bad value is one ``error:`` line before any judge call.
"""

from __future__ import annotations

import base64
import json
import math
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, run_cli, sample_labels, sample_rows
from helpers.judge_server import LOGPROBS_SHAPES, REFUSAL, USAGE_SHAPES, JudgeServer

from harness.core.errors import ConfigError
from harness.judges.openai_chat import OpenAIJudge
from harness.metrics.ranking import average_precision

CANARY = "sk-field-canary-5f0e1d2c3b4a"
PASSWORD = "pw-field-canary-9a8b7c"
KEY_ENV = {"HARNESS_KEY": CANARY}


@pytest.fixture(autouse=True)
def _no_known_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no registered secret (runs are in process: a key registered
    by an earlier run would hide a run that forgot to register its own)."""
    import harness.core.redact

    monkeypatch.setattr(harness.core.redact, "_SECRETS", set())


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer(sample_labels(), retry_after="0.01") as judge:
        yield judge


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for this module's MLflow store (its database and nothing else)."""
    return tmp_path_factory.mktemp("field_mlflow")


def llm(url: str, *extra: str, metric: str = "llm_with_reference") -> tuple[str, ...]:
    return (f"metric={metric}", "judge=local", f"judge.base_url={url}",
            "judge.model=test-judge", *extra)


def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
        tracking: str = "none") -> CliResult:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return run_cli(*args, f"tracking={tracking}", cwd=tmp_path, env=env)


def one_error(result: CliResult) -> str:
    """The run's one ``error:`` line; there is no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def expected(limit: int | None = None) -> list[list[int]]:
    """The verdicts the bundled data deserves (a chunk is relevant iff it is a reference)."""
    rows = sample_rows()[:limit]
    return [[int(i in r["reference_context_ids"]) for i in r["retrieved_context_ids"]]
            for r in rows]


def leaks(secrets: list[str], roots: list[Path], texts: list[str]) -> list[str]:
    """Every file under ``roots`` (read as bytes) and every text holding a secret."""
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                found += [f"{path}: {s}" for s in secrets if s.encode() in data]
    found += [f"text {i}: {s}" for i, t in enumerate(texts) for s in secrets if s in t]
    return found


def mlflow_env(store: Path) -> dict[str, str]:
    return {"MLFLOW_TRACKING_URI": f"sqlite:///{store / 'mlflow.db'}"}


# ------------------------------------------------------------------------------------------
# 7. Secrets
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("models_endpoint", ["ok", "open"])  # preflight / the first call
def test_key_echoed_in_a_401_is_written_nowhere(
    tmp_path: Path, store: Path, _private_cache: Path, models_endpoint: str
) -> None:
    with JudgeServer(sample_labels(), api_key="the-right-key", echo_auth=True,
                     models_endpoint=models_endpoint) as judge:
        result = cli(tmp_path, *llm(judge.base_url, "judge.api_key_env=HARNESS_KEY"),
                     f"experiment_name=field_401_{models_endpoint}",
                     env={**KEY_ENV, **mlflow_env(store)}, tracking="mlflow")
        assert judge.stats.ok == 0
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: judge: {judge.base_url} rejected the API key from $HARNESS_KEY "
                           "(HTTP 401 Unauthorized: Incorrect API key provided.")
    assert "Bearer ***" in line  # the echo was there, masked
    assert leaks([CANARY], [tmp_path, store, _private_cache], [result.stdout, result.stderr]) == []


@pytest.mark.slow
def test_key_echoed_in_500_and_400_bodies_is_masked_in_rows_summary_and_mlflow(
    tmp_path: Path, store: Path, _private_cache: Path
) -> None:
    # one call at a time, in order: q01's first chunk fails twice, q02's first one once
    with JudgeServer(sample_labels(), echo_auth=True, retry_after="0.01",
                     script=["500", "500", "ok", "ok", "400"]) as judge:
        result = cli(tmp_path, *llm(judge.base_url, "judge.api_key_env=HARNESS_KEY",
                                    "judge.max_retries=1", "judge.max_concurrency=1"),
                     "run.limit=4", "experiment_name=field_echo",
                     env={**KEY_ENV, **mlflow_env(store)}, tracking="mlflow")
    assert result.returncode == 0, result.stderr
    errors = [r["error"] for r in result.rows() if r["error"]]
    assert errors == [
        "chunk 1 of 3: judge call failed after 1 retry: HTTP 500 Internal Server Error: The "
        "server had an error (test judge). (Authorization: Bearer ***)",
        "chunk 1 of 3: judge rejected the request: HTTP 400 Bad Request: Invalid request "
        "(test judge). (Authorization: Bearer ***)",
    ]
    assert "Bearer ***" in json.dumps(result.summary()["unscored_reasons"])
    # the replies quote the key in their reasons too: masked, and the verdicts stand
    scored = [r for r in result.rows() if r["score"] is not None]
    assert [r["verdicts"] for r in scored] == expected(4)[2:]
    assert all(x.endswith("(Authorization: Bearer ***)") for r in scored for x in r["reasons"])
    # what is scanned below holds the run: MLflow's copy of the rows, the verdict cache
    [logged] = tmp_path.glob("mlruns/*/*/artifacts/samples.jsonl")
    assert "Bearer ***" in logged.read_text("utf-8")
    assert (_private_cache / "harness" / "verdicts.sqlite").stat().st_size > 0
    assert leaks([CANARY], [tmp_path, store, _private_cache], [result.stdout, result.stderr]) == []


@pytest.mark.slow
def test_base_url_credentials_are_sent_as_basic_auth_and_written_nowhere(
    tmp_path: Path, store: Path, _private_cache: Path
) -> None:
    token = base64.b64encode(f"judge-user:{PASSWORD}".encode()).decode()
    with JudgeServer(sample_labels(), echo_auth=True, retry_after="0.01",
                     script=["500"]) as judge:
        url = judge.base_url.replace("http://", f"http://judge-user:{PASSWORD}@")
        result = cli(tmp_path, *llm(url, "judge.max_retries=0", "judge.max_concurrency=1"),
                     "run.limit=3", "experiment_name=field_basic_auth",
                     env=mlflow_env(store), tracking="mlflow")
        sent = {r["headers"].get("authorization") for r in judge.requests}
    assert result.returncode == 0, result.stderr
    assert sent == {f"Basic {token}"}
    rows = result.rows()
    assert [r["verdicts"] for r in rows[1:]] == expected(3)[1:]
    assert rows[0]["error"].endswith("(Authorization: Basic ***)")
    assert rows[1]["reasons"][0].endswith("(Authorization: Basic ***)")
    secrets = [PASSWORD, token]
    assert leaks(secrets, [tmp_path, store, _private_cache], [result.stdout, result.stderr]) == []
    assert result.summary()["judge"]["base_url"].startswith("http://***@127.0.0.1:")


def test_base_url_credentials_of_a_down_endpoint_are_not_printed(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = cli(tmp_path, *llm(f"http://judge-user:{PASSWORD}@127.0.0.1:{port}/v1"))
    assert result.returncode == 2
    assert one_error(result).startswith(f"error: judge: cannot reach http://***@127.0.0.1:{port}/v1")
    assert leaks([PASSWORD], [tmp_path], [result.stdout, result.stderr]) == []


def test_base_url_credentials_rejected_say_so(tmp_path: Path) -> None:
    with JudgeServer(api_key="the-right-key", echo_auth=True) as judge:
        url = judge.base_url.replace("http://", f"http://judge-user:{PASSWORD}@")
        result = cli(tmp_path, *llm(url))
    assert result.returncode == 2
    assert "rejected the credentials in judge.base_url (HTTP 401" in one_error(result)
    assert leaks([PASSWORD], [tmp_path], [result.stdout, result.stderr]) == []


def test_base_url_credentials_and_a_key_variable_are_one_too_many(
    tmp_path: Path, server: JudgeServer
) -> None:
    url = server.base_url.replace("http://", f"http://judge-user:{PASSWORD}@")
    result = cli(tmp_path, *llm(url, "judge.api_key_env=HARNESS_KEY"), env=KEY_ENV)
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith("error: judge.base_url: http://***@127.0.0.1:")
    assert "set judge.api_key_env=null" in line
    assert server.stats.requests == 0
    assert leaks([PASSWORD, CANARY], [tmp_path], [result.stdout, result.stderr]) == []


@pytest.mark.slow
def test_openai_base_url_from_the_environment_is_checked_and_redacted(
    tmp_path: Path, server: JudgeServer
) -> None:
    url = server.base_url.replace("http://", f"http://judge-user:{PASSWORD}@")
    openai_judge = ("metric=llm_with_reference", "judge=openai", "judge.model=test-judge",
                    "run.limit=2")
    env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": CANARY}
    both = cli(tmp_path / "both", *openai_judge, env=env)
    assert both.returncode == 2
    assert one_error(both).startswith(
        f"error: $OPENAI_BASE_URL: {url.replace(f'judge-user:{PASSWORD}', '***')} carries "
        "credentials and judge.api_key_env=OPENAI_API_KEY names a key")
    basic = cli(tmp_path / "basic", *openai_judge, "judge.api_key_env=null", env=env)
    assert basic.returncode == 0, basic.stderr
    assert [r["verdicts"] for r in basic.rows()] == expected(2)
    bad = cli(tmp_path / "bad", *openai_judge, env={**env, "OPENAI_BASE_URL": "localhost/v1"})
    assert one_error(bad) == ("error: $OPENAI_BASE_URL: expected an http:// or https:// URL "
                              "such as http://localhost:8000/v1, got 'localhost/v1'")
    texts = [r.stdout + r.stderr for r in (both, basic, bad)]
    assert leaks([PASSWORD, CANARY], [tmp_path], texts) == []


# ------------------------------------------------------------------------------------------
# 8. Counters and what a refused request means
# ------------------------------------------------------------------------------------------


def retried(judge: JudgeServer) -> int:
    """Requests the server saw that were retries (retry-count header above 0)."""
    return sum(n for k, n in judge.stats.by_retry_count.items() if int(k) > 0)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "max_retries", "message"),
    [
        (["400"], 5, "judge rejected the request: HTTP 400 Bad Request: Invalid request "
                     "(test judge)."),
        (["500", "500", "500"], 2, "judge call failed after 2 retries: HTTP 500 Internal "
                                   "Server Error: The server had an error (test judge)."),
        (["500"], 0, "judge call failed: HTTP 500 Internal Server Error: The server had an "
                     "error (test judge)."),
        (["429", "429"], 1, "judge call failed after 1 retry: HTTP 429 Too Many Requests: "
                            "Rate limit reached (test judge)."),
    ],
)
def test_failed_calls_count_what_was_sent(
    tmp_path: Path, server: JudgeServer, script: list[str], max_retries: int, message: str
) -> None:
    server.configure(script=script)
    result = cli(tmp_path, *llm(server.base_url, f"judge.max_retries={max_retries}",
                                "judge.max_concurrency=1"), "run.limit=3")
    assert result.returncode == 0, result.stderr
    rows = result.rows()
    assert rows[0]["error"] == f"chunk 1 of 3: {message}"
    assert [r["verdicts"] for r in rows[1:]] == expected(3)[1:]
    judge = result.summary()["judge"]
    assert judge["requests"] == server.stats.requests  # what was really sent
    assert judge["retries"] == retried(server) == len(script) - 1
    assert judge["failures"] == 1


@pytest.mark.slow
def test_a_timed_out_call_counts_its_retries(tmp_path: Path, server: JudgeServer) -> None:
    server.configure(script=["hang", "hang"], hang_seconds=5)
    result = cli(tmp_path, *llm(server.base_url, "judge.max_retries=1", "judge.timeout=0.5",
                                "judge.max_concurrency=1"), "run.limit=2")
    assert result.returncode == 0, result.stderr
    assert [r["error"] for r in result.rows()] == [
        "chunk 1 of 3: judge call failed after 1 retry: no answer within judge.timeout=0.5 s",
        None,
    ]
    judge = result.summary()["judge"]
    assert judge["requests"] == server.stats.requests == 7 and judge["retries"] == 1


@pytest.mark.slow
def test_faulty_run_counts_match_the_server(tmp_path: Path, server: JudgeServer) -> None:
    server.configure(fail_429=0.2, fail_500=0.1)
    result = cli(tmp_path, *llm(server.base_url, "judge.max_retries=10"), "run.limit=10")
    assert result.returncode == 0, result.stderr
    assert [r["verdicts"] for r in result.rows()] == expected(10)
    judge = result.summary()["judge"]
    assert server.stats.status_429 + server.stats.status_500 > 0
    assert judge["requests"] == server.stats.requests
    assert judge["retries"] == retried(server) == server.stats.status_429 + server.stats.status_500


def test_output_mode_step_downs_are_counted_as_sent(tmp_path: Path, server: JudgeServer) -> None:
    server.configure(reject_formats=["json_schema", "json_object"])
    result = cli(tmp_path, *llm(server.base_url, "judge.max_concurrency=1"), "run.limit=2")
    assert result.returncode == 0, result.stderr
    judge = result.summary()["judge"]
    assert judge["output_mode_fallbacks"] == 2
    # one call at a time: each rejected format was sent once
    assert judge["requests"] == server.stats.requests == server.stats.ok + 2
    assert judge["retries"] == 0


@pytest.mark.parametrize("tail", ["", "/"])
def test_404_for_a_base_url_without_v1_says_so(
    tmp_path: Path, server: JudgeServer, tail: str
) -> None:
    root = server.base_url.removesuffix("/v1")
    result = cli(tmp_path, *llm(root + tail, "judge.max_retries=5"))
    assert result.returncode == 2
    assert one_error(result) == (
        f"error: judge: {root + tail} answered 404 Not Found for /chat/completions; the base "
        f"URL probably lacks /v1 (judge.base_url={root}/v1)"
    )
    assert not (tmp_path / "out" / "summary.json").exists()


def test_404_for_another_path_points_at_the_base_url(tmp_path: Path, server: JudgeServer) -> None:
    url = server.base_url.removesuffix("/v1") + "/api/v1"
    result = cli(tmp_path, *llm(url))
    assert result.returncode == 2
    assert one_error(result) == (
        f"error: judge: {url} answered 404 Not Found for /chat/completions; check "
        "judge.base_url (the API's root, such as http://HOST:PORT/v1)"
    )


def test_404_for_a_model_not_served_names_the_served_ones(
    tmp_path: Path, server: JudgeServer
) -> None:
    server.configure(models=["judge-a", "judge-b"])
    result = cli(tmp_path, *llm(server.base_url))
    assert result.returncode == 2
    assert one_error(result) == (
        f"error: judge: {server.base_url} does not serve the model 'test-judge' (HTTP 404 Not "
        "Found: The model `test-judge` does not exist.); set judge.model to one it serves: "
        "judge-a, judge-b"
    )
    assert server.stats.ok == 0


@pytest.mark.parametrize("models_endpoint", ["ok", "open"])  # preflight / the first call
def test_401_names_the_variable_of_the_key(tmp_path: Path, models_endpoint: str) -> None:
    with JudgeServer(sample_labels(), api_key="the-right-key",
                     models_endpoint=models_endpoint) as judge:
        result = cli(tmp_path, *llm(judge.base_url, "judge.api_key_env=HARNESS_KEY"),
                     env=KEY_ENV)
        assert judge.stats.by_retry_count.get(1, 0) == 0  # never retried
    assert result.returncode == 2
    assert one_error(result) == (
        f"error: judge: {judge.base_url} rejected the API key from $HARNESS_KEY (HTTP 401 "
        "Unauthorized: Incorrect API key provided.); check the key in $HARNESS_KEY"
    )


@pytest.mark.parametrize("models_endpoint", ["ok", "open"])
def test_401_without_a_key_variable_says_how_to_give_one(
    tmp_path: Path, models_endpoint: str
) -> None:
    with JudgeServer(sample_labels(), api_key="the-right-key",
                     models_endpoint=models_endpoint) as judge:
        result = cli(tmp_path, *llm(judge.base_url))
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: judge: {judge.base_url} wants an API key (HTTP 401")
    assert line.endswith("set judge.api_key_env=NAME")
    assert "$None" not in result.stderr


def test_403_at_preflight_names_the_variable_of_the_key(
    tmp_path: Path, server: JudgeServer
) -> None:
    server.configure(models_endpoint="403")
    result = cli(tmp_path, *llm(server.base_url, "judge.api_key_env=HARNESS_KEY"), env=KEY_ENV)
    assert result.returncode == 2
    assert one_error(result) == (
        f"error: judge: {server.base_url} rejected the API key from $HARNESS_KEY (HTTP 403 "
        "Forbidden: You are not allowed to list models.); check the key in $HARNESS_KEY"
    )
    assert server.stats.requests == 0


def test_403_on_the_first_call_stops_the_run(tmp_path: Path, server: JudgeServer) -> None:
    server.configure(script=["403"])
    result = cli(tmp_path, *llm(server.base_url, "judge.api_key_env=HARNESS_KEY",
                                "judge.max_concurrency=1"), env=KEY_ENV)
    assert result.returncode == 2
    assert one_error(result) == (
        f"error: judge: {server.base_url} rejected the API key from $HARNESS_KEY (HTTP 403 "
        "Forbidden: You are not allowed to use this model.); check the key in $HARNESS_KEY"
    )
    assert server.stats.status_403 == 1


def test_preflight_5xx_is_one_line(tmp_path: Path, server: JudgeServer) -> None:
    server.configure(models_endpoint="500")
    result = cli(tmp_path, *llm(server.base_url))
    assert result.returncode == 2
    assert one_error(result) == (
        f"error: judge: {server.base_url} answered HTTP 500 Internal Server Error: The server "
        "had an error (test judge)."
    )
    assert server.stats.requests == 0


# ------------------------------------------------------------------------------------------
# 10. Replies of other shapes
# ------------------------------------------------------------------------------------------


def scored_as_spec(result: CliResult, limit: int, eps: float = 1e-10) -> list[dict[str, Any]]:
    assert result.returncode == 0, result.stderr
    rows = result.rows()
    assert [r["verdicts"] for r in rows] == expected(limit)
    assert [r["score"] for r in rows] == [average_precision(v, eps) for v in expected(limit)]
    return rows


@pytest.mark.parametrize(
    "knobs",
    [{"content_shape": "parts"}, {"content_shape": "object"}, {"extra_fields": True},
     {"content_shape": "parts", "extra_fields": True, "usage_shape": "strings"}],
)
def test_content_of_other_shapes_gives_the_verdicts(
    tmp_path: Path, server: JudgeServer, knobs: dict[str, Any]
) -> None:
    server.configure(**knobs)
    result = cli(tmp_path, *llm(server.base_url), "run.limit=4")
    scored_as_spec(result, 4)


def test_listwise_content_parts_give_the_verdicts(tmp_path: Path, server: JudgeServer) -> None:
    server.configure(content_shape="parts", extra_fields=True)
    result = cli(tmp_path, *llm(server.base_url, metric="contextual_precision"), "run.limit=4")
    rows = scored_as_spec(result, 4, eps=0.0)
    assert all(r["reason"] for r in rows)


@pytest.mark.parametrize("shape", USAGE_SHAPES)
def test_usage_of_any_shape_is_counted_or_ignored(
    tmp_path: Path, server: JudgeServer, shape: str
) -> None:
    server.configure(usage_shape=shape)
    result = cli(tmp_path, *llm(server.base_url), "run.limit=3",
                 "+judge.prices.test-judge={input: 1.0, output: 2.0}")
    scored_as_spec(result, 3)
    judge = result.summary()["judge"]
    counts = ("prompt_tokens", "completion_tokens", "cached_prompt_tokens")
    assert all(isinstance(judge[k], int | float) and 0 <= judge[k] < 1e9 for k in counts)
    readable = shape in ("ok", "strings", "floats", "details_null", "details_list",
                         "details_string")
    assert (judge["prompt_tokens"] > 0) is readable
    assert judge["cost_usd"] is None  # a loopback server has no per-token price
    if shape.startswith("details"):
        assert judge["cached_prompt_tokens"] == 0


@pytest.mark.slow
def test_cached_replies_with_odd_usage_are_reused(tmp_path: Path, server: JudgeServer) -> None:
    server.configure(usage_shape="strings")
    first = cli(tmp_path / "a", *llm(server.base_url), "run.limit=3")
    second = cli(tmp_path / "b", *llm(server.base_url), "run.limit=3")
    scored_as_spec(first, 3)
    scored_as_spec(second, 3)
    judge = second.summary()["judge"]
    assert judge["requests"] == 0 and judge["cache_hits"] == sum(map(len, expected(3)))
    assert judge["saved_prompt_tokens"] == first.summary()["judge"]["prompt_tokens"] > 0


@pytest.mark.parametrize("shape", LOGPROBS_SHAPES)
def test_logprobs_of_any_shape_give_soft_verdicts_or_fall_back(
    tmp_path: Path, server: JudgeServer, shape: str
) -> None:
    server.configure(logprobs_shape=shape)
    result = cli(tmp_path, *llm(server.base_url, "metric.soft=true"), "run.limit=3")
    assert result.returncode == 0, result.stderr
    rows = result.rows()
    assert [r["verdicts"] for r in rows] == expected(3)
    usable = shape in ("ok", "strings", "fenced", "padded", "split")
    n_chunks = sum(map(len, expected(3)))
    assert result.summary()["judge"]["soft_fallbacks"] == (0 if usable else n_chunks)
    for row in rows:
        relevance = row["relevance"]
        assert all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in relevance)
        if usable:  # the test judge's P(relevant) for a 0/1 label is 0.03/0.97
            assert relevance == pytest.approx([0.97 if v else 0.03 for v in row["verdicts"]])
        else:
            assert relevance == [float(v) for v in row["verdicts"]]


@pytest.mark.parametrize(
    ("shape", "reason"),
    [
        ("refusal", f"the judge refused: {REFUSAL}"),
        ("null", "the reply has no text (finish_reason=stop)"),
        ("error", "the judge answered an error: upstream model overloaded"),
        ("html", "not a chat completion: b'<html><body>Gateway</body></html>'"),
    ],
)
def test_replies_without_a_verdict_leave_a_clear_reason(
    tmp_path: Path, server: JudgeServer, shape: str, reason: str
) -> None:
    server.configure(content_shape=shape)
    result = cli(tmp_path, *llm(server.base_url, "judge.parse_retries=1"), "run.limit=2",
                 "run.max_unscored_frac=1")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    rows = result.rows()
    assert [r["score"] for r in rows] == [None, None]
    assert rows[0]["error"] == f"chunk 1 of 3: unusable judge reply after 2 attempts: {reason}"
    assert result.summary()["n_unscored"] == 2


def test_listwise_refusals_leave_a_clear_reason(tmp_path: Path, server: JudgeServer) -> None:
    server.configure(content_shape="refusal")
    result = cli(tmp_path, *llm(server.base_url, "judge.parse_retries=0",
                                metric="contextual_precision"), "run.limit=2")
    assert result.returncode == 3  # nothing scored: the run fails, its rows are kept
    assert f"the judge refused: {REFUSAL}" in one_error(result)
    assert [r["error"] for r in result.rows()] == [
        f"unusable judge reply after 1 attempt: the judge refused: {REFUSAL}"] * 2


# ------------------------------------------------------------------------------------------
# 3. Settings checked before any judge call
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "key", "got"),
    [
        ("judge.temperature=-0.5", "judge.temperature", "-0.5"),
        ("judge.temperature=nan", "judge.temperature", "nan"),
        ("judge.temperature=inf", "judge.temperature", "inf"),
        ("judge.top_p=0", "judge.top_p", "0"),
        ("judge.top_p=1.5", "judge.top_p", "1.5"),
        ("judge.top_p=nan", "judge.top_p", "nan"),
        ("judge.max_tokens=0", "judge.max_tokens", "0"),
        ("judge.timeout=0", "judge.timeout", "0"),
        ("judge.timeout=-1", "judge.timeout", "-1"),
        ("judge.timeout=inf", "judge.timeout", "inf"),
        ("judge.max_retries=-1", "judge.max_retries", "-1"),
        ("judge.parse_retries=-1", "judge.parse_retries", "-1"),
        ("judge.max_concurrency=0", "judge.max_concurrency", "0"),
        ("judge.top_logprobs=21", "judge.top_logprobs", "21"),
        ("judge.top_logprobs=-1", "judge.top_logprobs", "-1"),
        ("judge.preflight_timeout=0", "judge.preflight_timeout", "0"),
        ("judge.preflight_timeout=nan", "judge.preflight_timeout", "nan"),
        ("judge.samples=0", "judge.samples", "0"),
        ("judge.vote=median", "judge.vote", "'median'"),
        ("judge.output_mode=yaml", "judge.output_mode", "'yaml'"),
        ("judge.model=''", "judge.model", "''"),
        ("judge.api_key_env=''", "judge.api_key_env", "''"),
        ("judge.base_url=localhost:8000/v1", "judge.base_url", "'localhost:8000/v1'"),
        ("judge.base_url='http://[::1'", "judge.base_url", "'http://[::1'"),
        ("judge.base_url=ftp://host/v1", "judge.base_url", "'ftp://host/v1'"),
        ("+judge.prices.test-judge.input=-1", "judge.prices.test-judge.input", "-1"),
        ("+judge.prices.test-judge.output=inf", "judge.prices.test-judge.output", "inf"),
        ("+judge.prices.test-judge=3", "judge.prices.test-judge", "3"),
        ("metric.eps=inf", "metric.eps", "inf"),
        ("metric.eps=nan", "metric.eps", "nan"),
        ("metric.eps=-1e-3", "metric.eps", "-0.001"),
    ],
)
def test_bad_judge_setting_is_one_line_before_any_call(
    tmp_path: Path, server: JudgeServer, override: str, key: str, got: str
) -> None:
    # the base URL override comes last when the case sets its own
    args = llm(server.base_url, override)
    result = cli(tmp_path, *args)
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: {key}: expected "), line
    assert line.endswith(f"got {got}") or f"got {got} " in line or f"got {got};" in line, line
    assert server.stats.requests == 0
    assert not (tmp_path / "out" / "samples.jsonl").exists()


@pytest.mark.parametrize("threshold", ["nan", "1.5", "-0.1"])
def test_bad_threshold_is_one_line_before_any_call(
    tmp_path: Path, server: JudgeServer, threshold: str
) -> None:
    result = cli(tmp_path, *llm(server.base_url, f"metric.threshold={threshold}",
                                metric="contextual_precision"))
    assert result.returncode == 2
    assert one_error(result).startswith("error: metric.threshold: expected ")
    assert server.stats.requests == 0


def test_unknown_price_key_gets_a_did_you_mean(tmp_path: Path, server: JudgeServer) -> None:
    result = cli(tmp_path, *llm(server.base_url, "+judge.prices.test-judge.inptu=1"))
    assert result.returncode == 2
    assert one_error(result).startswith(
        "error: judge.prices.test-judge.inptu: unknown price (did you mean 'input'?)")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"temperature": float("nan")}, "judge.temperature: expected finite float >= 0, got nan"),
        ({"timeout": float("inf")}, "judge.timeout: expected finite float > 0, got inf"),
        ({"top_p": 0.0}, "judge.top_p: expected finite float in (0, 1] or null, got 0.0"),
        ({"max_tokens": 0}, "judge.max_tokens: expected int >= 1 or null, got 0"),
        ({"top_logprobs": 50}, "judge.top_logprobs: expected int in [0, 20], got 50"),
        ({"samples": 0}, "judge.samples: expected int >= 1, got 0"),
        ({"vote": "median"},
         "judge.vote: expected 'majority' or 'mean', got 'median' (did you mean 'mean'?)"),
        ({"pacing": 1}, "judge.pacing: expected 'adaptive' or 'fixed', got 1"),
        ({"max_retries": -1}, "judge.max_retries: expected int >= 0, got -1"),
        ({"prices": {"m": {"input": float("nan")}}},
         "judge.prices.m.input: expected finite float >= 0, got nan"),
    ],
)
def test_the_python_api_checks_the_same_settings(setting: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        OpenAIJudge("m", base_url="http://127.0.0.1:1/v1", api_key_env=None, **setting)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("kind", "setting", "message"),
    [
        ("pointwise", {"eps": math.inf}, "metric.eps: expected finite float >= 0, got inf"),
        ("pointwise", {"eps": math.nan}, "metric.eps: expected finite float >= 0, got nan"),
        ("listwise", {"eps": -1.0}, "metric.eps: expected finite float >= 0, got -1.0"),
        ("listwise", {"threshold": math.nan},
         "metric.threshold: expected a number in [0, 1] or null, got nan"),
        ("listwise", {"threshold": 2}, "metric.threshold: expected a number in [0, 1] or null, "
                                       "got 2"),
    ],
)
def test_the_python_api_checks_the_metric_settings(
    kind: str, setting: dict[str, Any], message: str
) -> None:
    from helpers.judge import prompt

    from harness.metrics.contextual_precision import ContextualPrecision
    from harness.metrics.llm import LLMContextPrecision

    judge = OpenAIJudge("m", base_url="http://127.0.0.1:1/v1", api_key_env=None)
    with pytest.raises(ConfigError) as err:
        if kind == "pointwise":
            LLMContextPrecision("llm_with_reference", judge, prompt("llm_with_reference"),
                                **setting)
        else:
            ContextualPrecision("contextual_precision", judge, prompt("contextual_precision"),
                                **setting)
    assert str(err.value) == message
