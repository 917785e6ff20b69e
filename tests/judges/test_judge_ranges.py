"""The judge's ranges are annotations on its constructor, checked by the one mechanism
(harness.core.validation) every part uses: in a config before anything is built, and by the
constructor itself for the Python API, never twice."""

from __future__ import annotations

import typing

import pytest

from harness.core.errors import ConfigError
from harness.core.validation import Range, check_arguments, prechecked
from harness.judges.openai_chat import OpenAIJudge

BAD = [
    ("temperature", -0.5, "judge.temperature: expected finite float >= 0, got -0.5"),
    ("top_p", 1.5, "judge.top_p: expected finite float in (0, 1] or null, got 1.5"),
    ("timeout", 0, "judge.timeout: expected finite float > 0, got 0"),
    ("preflight_timeout", -1.0, "judge.preflight_timeout: expected finite float > 0, got -1.0"),
    ("max_concurrency", 0, "judge.max_concurrency: expected int >= 1, got 0"),
    ("parse_retries", 1.5, "judge.parse_retries: expected int, got 1.5"),
    ("top_logprobs", -1, "judge.top_logprobs: expected int in [0, 20], got -1"),
    ("max_wait", float("nan"), "judge.max_wait: expected finite float >= 0, got nan"),
    ("output_mode", "json_objekt", "judge.output_mode: expected 'json_schema' or "
     "'json_object_schema' or 'json_object' or 'text', got 'json_objekt' "
     "(did you mean 'json_object'?)"),
]


@pytest.mark.parametrize(("key", "value", "message"), BAD)
def test_a_config_and_the_python_api_get_the_same_line(key: str, value: object,
                                                       message: str) -> None:
    node = {"_target_": "harness.judges.openai_chat.OpenAIJudge", "model": "m", key: value}
    with pytest.raises(ConfigError) as config:
        check_arguments("judge", OpenAIJudge, node)
    with pytest.raises(ConfigError) as api:
        OpenAIJudge("m", base_url="http://127.0.0.1:1/v1", api_key_env=None, **{key: value})
    assert str(config.value) == str(api.value) == message


def test_a_part_built_from_a_checked_config_is_not_checked_again() -> None:
    with prechecked():  # as harness.config.build builds a part it has checked
        judge = OpenAIJudge("m", base_url="http://127.0.0.1:1/v1", api_key_env=None,
                            temperature=-0.5)
    assert judge.transport.temperature == -0.5
    with pytest.raises(ConfigError, match="^judge.temperature: "):
        OpenAIJudge("m", base_url="http://127.0.0.1:1/v1", api_key_env=None, temperature=-0.5)


def test_what_no_range_states_is_still_checked_inside_a_build() -> None:
    with prechecked(), pytest.raises(ConfigError, match="^judge.model: expected the name"):
        OpenAIJudge(" ", api_key_env=None)
    with prechecked(), pytest.raises(ConfigError, match=r"^judge.prices.m.inptu: unknown price "
                                                        r"\(did you mean 'input'\?\)"):
        OpenAIJudge("m", api_key_env=None, prices={"m": {"inptu": 1.0}})


def test_every_bounded_number_declares_its_range() -> None:
    hints = typing.get_type_hints(OpenAIJudge.__init__, include_extras=True)
    ranged = {name for name, hint in hints.items()
              if any(isinstance(x, Range) for a in (hint, *typing.get_args(hint))
                     for x in typing.get_args(a))}
    assert ranged == {"temperature", "top_p", "max_tokens", "timeout", "max_retries",
                      "max_concurrency", "parse_retries", "top_logprobs", "preflight_timeout",
                      "samples", "max_wait", "max_timeouts_in_a_row", "batch_poll",
                      "batch_max_requests", "batch_max_bytes"}
