"""Issue 13 item 4: servers that say no differently, replies cut short, soft verdicts whose
tokens do not spell the content. Against the real test judge (``tests/helpers/judge_server.py``)
through the real openai SDK; the server texts are those real servers send."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, run_cli
from helpers.judge import judge, listwise, pointwise, sample, score

from harness.core.errors import ConfigError, headline
from harness.core.types import Completion, JudgeRequest
from harness.judges.replies.failures import MESSAGE_CHARS, rejects_format
from harness.judges.replies.parse import soft_verdicts

# llama-cpp-python 0.3 (``python -m llama_cpp.server``) answers a json_schema response format
# with HTTP 500 and FastAPI's RequestValidationError as the message.
LCP_FASTAPI = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n"
)
# the same refusal as pydantic's own ValidationError prints it
LCP_PYDANTIC = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should "
    "be 'text' or 'json_object' [type=literal_error, input_value='json_schema', "
    "input_type=str]\n    For further information visit "
    "https://errors.pydantic.dev/2.9/v/literal_error"
)

REJECTIONS = [
    (500, LCP_FASTAPI),
    (500, LCP_PYDANTIC),
    # OpenAI
    (400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported with "
          "this model. Learn more about supported models at the Structured Outputs guide: "
          "https://platform.openai.com/docs/guides/structured-outputs"),
    (400, "Invalid parameter: 'response_format' of type 'json_object' is not supported with "
          "this model."),
    (400, "'messages' must contain the word 'json' in some form, to use 'response_format' of "
          "type 'json_object'."),
    # vLLM (xgrammar), 400 and its 422-style body
    (400, "The provided JSON schema contains features not supported by xgrammar."),
    (422, "{'object': 'error', 'message': 'The provided JSON schema contains features not "
          "supported by xgrammar.', 'type': 'BadRequestError', 'param': None, 'code': 400}"),
    # llama-server: an unconvertible schema (400 since b7200), ik_llama.cpp's older 500
    (400, 'JSON schema conversion failed: Unrecognized schema: {"not":{}}'),
    (500, 'response_format type must be one of "text" or "json_object", but got: json_schema'),
    # an OpenAI-compatible gateway
    (400, "The parameter `response_format.type` specified in the request are not valid: "
          "invalid value: `json_schema`, supported values are: `json_object` and `text`."),
    # Ollama
    (400, 'invalid format: expected "json" or a JSON schema'),
    (500, "invalid JSON schema in format"),
    # LiteLLM's proxy (UnsupportedParamsError carries status 500)
    (500, "litellm.UnsupportedParamsError: ollama does not support parameters: "
          "{'response_format': {'type': 'json_schema'}}, for model=llama3. To drop these, set "
          "`litellm.drop_params=True` or for proxy:\n\n`litellm_settings:\n drop_params: true`\n"),
]

OTHER_ERRORS = [
    (500, "The server had an error while processing your request. Sorry about that!"),
    (400, "This model's maximum context length is 4096 tokens. However, you requested 5120 "
          "tokens (4096 in the messages, 1024 in the completion). Please reduce the length of "
          "the messages or completion."),
    (500, "[json.exception.parse_error.101] parse error at line 1, column 1: attempting to "
          "parse an empty input; check that your input string or stream contains the expected "
          "JSON"),
    (503, "Loading model"),
    (400, "invalid message format"),
    # statuses whose cause is not the format, even where the body quotes the request
    (429, "Rate limit reached for requests with response_format json_schema: invalid"),
    (404, "The model `x` does not exist; json_schema not supported"),
    (401, "Incorrect API key provided; response_format is invalid"),
    (200, "response_format json_schema is not supported"),
]


@pytest.mark.parametrize(("status", "text"), REJECTIONS)
def test_format_rejections_of_real_servers_are_recognised(status: int, text: str) -> None:
    assert rejects_format(status, text) is True
    # the SDK's text of the same error (``Error code: N - {body}``) reads the same
    sdk = f"Error code: {status} - {{'error': {{'message': {text!r}, 'type': 'server_error'}}}}"
    assert rejects_format(status, sdk) is True


@pytest.mark.parametrize(("status", "text"), OTHER_ERRORS)
def test_other_errors_are_not_format_rejections(status: int, text: str) -> None:
    assert rejects_format(status, text) is False


@pytest.mark.parametrize(
    ("message", "line"),
    [
        (LCP_FASTAPI, "1 validation error: response_format.type: Input should be 'text' or "
                      "'json_object'"),
        (LCP_PYDANTIC, "1 validation error for CreateChatCompletionRequest: response_format.type:"
                       " Input should be 'text' or 'json_object' [type=literal_error, "
                       "input_value='json_schema', input_type=str]"),
        ("judge call failed: HTTP 500 Internal Server Error: " + LCP_FASTAPI,
         "judge call failed: HTTP 500 Internal Server Error: 1 validation error: "
         "response_format.type: Input should be 'text' or 'json_object'"),
        ("first line\nsecond line", "first line"),
        ("\n\n  only line  \n", "only line"),
        ("x" * 400, "x" * 300 + "…"),
        ("", ""),
    ],
)
def test_headline_is_the_first_meaningful_line(message: str, line: str) -> None:
    assert headline(message) == line


# ------------------------------------------------------------------------------------------
# The whole server message in the row, its first meaningful line on the console
# ------------------------------------------------------------------------------------------


def cli(tmp_path: Path, url: str, *args: str, metric: str = "llm_with_reference") -> CliResult:
    return run_cli(f"metric={metric}", "judge=local", f"judge.base_url={url}",
                   "judge.model=test-judge", "tracking=none", *args, cwd=tmp_path)


def test_a_servers_whole_message_is_kept_in_the_row(tmp_path: Path, judge_server: Any) -> None:
    judge_server.configure(fail_500=1.0, error_message=LCP_FASTAPI.strip())
    result = cli(tmp_path, judge_server.base_url, "judge.output_mode=text",
                 "judge.max_retries=0", "judge.cache=false", "run.limit=2",
                 "run.max_unscored_frac=1")
    assert result.returncode == 0, result.stderr
    head = "chunk 1 of 3: judge call failed: HTTP 500 Internal Server Error: "
    rows = result.rows()
    assert [r["error"] for r in rows] == [head + LCP_FASTAPI.strip()] * 2
    console = head + "1 validation error: response_format.type: Input should be 'text' or " \
                     "'json_object'"
    assert result.summary()["unscored_reasons"] == {console: 2}
    assert f"2 × {console}" in result.stdout
    assert "'input': 'json_schema'" not in result.stdout + result.stderr


def test_a_long_server_message_is_capped(tmp_path: Path, judge_server: Any) -> None:
    judge_server.configure(fail_500=1.0, error_message="line one\n" + "y" * 3 * MESSAGE_CHARS)
    result = cli(tmp_path, judge_server.base_url, "judge.max_retries=0", "run.limit=1",
                 "run.max_unscored_frac=1")
    [row] = result.rows()
    assert row["error"].endswith("…") and "line one\nyyy" in row["error"]
    assert MESSAGE_CHARS < len(row["error"]) < MESSAGE_CHARS + 200
    assert list(result.summary()["unscored_reasons"]) == [
        "chunk 1 of 3: judge call failed: HTTP 500 Internal Server Error: line one"
    ]


# ------------------------------------------------------------------------------------------
# finish_reason: length
# ------------------------------------------------------------------------------------------


def test_a_reply_cut_at_max_tokens_is_asked_once_with_a_clear_error(
    tmp_path: Path, judge_server: Any
) -> None:
    result = cli(tmp_path, judge_server.base_url, "judge.max_tokens=12", "run.limit=2")
    cut = "reply cut at judge.max_tokens=12 (finish_reason=length); raise judge.max_tokens"
    assert result.returncode == 3  # as any run that scored nothing: rows kept
    assert [r["error"] for r in result.rows()] == [f"chunk 1 of 3: {cut}"] * 2
    errors = [x for x in result.stderr.splitlines() if x.startswith("error: ")]
    assert len(errors) == 1 and cut in errors[0] and "Traceback" not in result.stderr
    judge = result.summary()["judge"]
    # one request per judgement (3 chunks × 2 samples): none re-asked with the same limit
    assert judge_server.stats.requests == judge["requests"] == 6
    assert judge["failures"] == judge["parse_failures"] == 6 and judge["retries"] == 0
    assert all(req["body"]["max_tokens"] == 12 for req in judge_server.requests)


def test_a_listwise_reply_cut_short_is_asked_once(tmp_path: Path, judge_server: Any) -> None:
    result = cli(tmp_path, judge_server.base_url, "judge.max_tokens=20", "run.limit=2",
                 "run.max_unscored_frac=1", metric="contextual_precision")
    assert result.returncode == 0, result.stderr
    assert [r["error"] for r in result.rows()] == [
        "reply cut at judge.max_tokens=20 (finish_reason=length); raise judge.max_tokens"] * 2
    assert judge_server.stats.requests == 2


def test_a_reply_cut_before_any_text_is_asked_once(tmp_path: Path, judge_server: Any) -> None:
    judge_server.configure(content_shape="length")  # a reasoning model that spent it thinking
    result = cli(tmp_path, judge_server.base_url, "judge.parse_retries=2", "run.limit=1",
                 "run.max_unscored_frac=1")
    [row] = result.rows()
    assert row["error"] == ("chunk 1 of 3: reply cut at judge.max_tokens=1024 before any "
                            "text (finish_reason=length); raise judge.max_tokens")
    assert judge_server.stats.requests == 3  # one per chunk


def test_completion_says_which_model_answered_and_why_it_stopped(judge_server: Any) -> None:
    judge_server.configure(reply_model="qwen2.5-coder-1.5b")
    messages = pointwise(judge_server).prompt.messages(
        question="q", answer="a", context="some chunk"
    )

    async def ask(**kw: Any) -> Completion:
        j = judge(judge_server, cache=False, **kw)
        try:
            result: Completion = await j.ask(JudgeRequest(messages, "pointwise"), lambda c: c)
            return result
        finally:
            await j.aclose()

    done = asyncio.run(ask())
    assert (done.model, done.finish_reason) == ("qwen2.5-coder-1.5b", "stop")
    assert done.content.startswith('{"reason"')


# ------------------------------------------------------------------------------------------
# Soft verdicts: tokens that do not spell the content
# ------------------------------------------------------------------------------------------

LABELS = {"a": 0.8, "b": 0.3, "c": 1}
SOFT = [0.8, 0.3, 0.97]  # the test judge's P(relevant): the label, 0.97 for a 1


@pytest.mark.parametrize("shape", ["ok", "fenced", "padded", "split"])
@pytest.mark.parametrize("mode", ["json_schema", "text"])
def test_soft_verdicts_when_tokens_and_content_differ(
    judge_server: Any, shape: str, mode: str
) -> None:
    judge_server.labels.update(LABELS)
    judge_server.configure(logprobs_shape=shape)
    settings = {"output_mode": mode, "cache": False}
    [point] = score(pointwise(judge_server, soft=True, eps=0.0, judge=settings),
                    [sample(["a", "b", "c"])])
    [lists] = score(listwise(judge_server, soft=True, include_reason=False, judge=settings),
                    [sample(["a", "b", "c"])])
    for result in (point, lists):
        assert result.verdicts == [1, 0, 1]
        assert result.details["relevance"] == pytest.approx(SOFT)
    assert point.details["relevance"] != [1.0, 0.0, 1.0]
    if shape != "ok":  # the fixture really sent tokens that differ from the content
        reply = judge_server.requests[-1]
        assert reply["body"]["logprobs"] is True


def tokens(*pieces: str | tuple[str, dict[str, float]]) -> list[dict[str, Any]]:
    """Logprob tokens: a plain piece is certain, ``(piece, {candidate: p})`` a choice."""
    out = []
    for piece in pieces:
        text, cands = (piece, {piece: 1.0}) if isinstance(piece, str) else piece
        out.append({"token": text, "logprob": math.log(cands[text]),
                    "top_logprobs": [{"token": t, "logprob": math.log(p)}
                                     for t, p in cands.items()]})
    return out


POINT = '{"reason": "fits", "verdict": 1}'
LIST = '{"verdicts": [{"reason": "x", "verdict": "yes"}, {"reason": "y", "verdict": "no"}]}'


@pytest.mark.parametrize(
    ("content", "stream", "expected"),
    [
        # llama.cpp's content without the fence its tokens keep
        (POINT, tokens("```", "json", "\n", '{"reason": "fits", "verdict": ',
                       ("1", {"1": 0.9, "0": 0.1}), "}", "\n", "```"), [0.9]),
        # content with the whitespace the tokens lack, and the reverse
        ("\n\n " + POINT.replace("1", "0") + "\n", tokens('{"reason": "fits", "verdict": ',
                                        ("0", {"0": 0.6, "1": 0.2}), "}"), [0.25]),
        (POINT, tokens("\n", "  ", '{"reason": "fits", "verdict":',
                       (" 1", {" 1": 0.7, " 0": 0.3}), "}", "\n"), [0.7]),
        # a value split over two tokens and glued to the quote before it
        (LIST, tokens('{"verdicts": [{"reason": "x", "verdict":',
                      (' "y', {' "y': 0.6, ' "n': 0.2, ' "N': 0.2}), 'es"}, ',
                      '{"reason": "y", "verdict": "', ("n", {"n": 0.75, "y": 0.25}), 'o"}]}'),
         [0.6, 0.25]),
        # candidates that read nothing (a stray quote, "not") are left out
        (POINT, tokens('{"reason": "fits", "verdict": ',
                       ("1", {"1": 0.5, '"': 0.3, "not": 0.1, "0": 0.1}), "}"), [5 / 6]),
        # tokens of another reply: nothing lines up, so no soft verdict
        (POINT, tokens('{"reason": "other", "verdict": ', ("0", {"0": 0.9, "1": 0.1}), "}"),
         None),
        # a verdict no candidate reads as yes or no
        (POINT.replace("1", '"maybe"'), tokens('{"reason": "fits", "verdict": "',
                                            ("maybe", {"maybe": 0.9, "perhaps": 0.1}), '"}'),
         None),
    ],
)
def test_soft_verdicts_locate_the_value_by_offsets(
    content: str, stream: list[dict[str, Any]], expected: list[float] | None
) -> None:
    got = soft_verdicts(content, stream)
    assert got == (None if expected is None else pytest.approx(expected))


def test_soft_without_top_logprobs_is_refused_up_front(tmp_path: Path, judge_server: Any) -> None:
    result = cli(tmp_path, judge_server.base_url, "metric.soft=true", "judge.top_logprobs=0")
    assert result.returncode == 2
    errors = [x for x in result.stderr.splitlines() if x.startswith("error: ")]
    assert errors == [
        "error: metric.soft=true reads P(relevant) from the judge's top logprobs, but "
        "judge.top_logprobs=0 asks for none; set judge.top_logprobs=5 (or metric.soft=false)"
    ]
    assert judge_server.stats.requests == 0
    with pytest.raises(ConfigError, match="judge.top_logprobs=0"):
        pointwise(judge_server, soft=True, judge={"top_logprobs": 0})


def test_a_cut_without_a_set_limit_names_the_setting() -> None:
    from harness.judges.replies.read import reply_cut

    assert str(reply_cut(None)) == ("reply cut at the endpoint's token limit "
                                    "(finish_reason=length); set judge.max_tokens higher")
