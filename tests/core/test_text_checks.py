"""One rule for text a run writes (issue 24, class 4): ``text_problem`` refuses a lone
surrogate wherever user text enters (dataset, retriever, prompt file); text a server or a
library wrote is made writable (U+FFFD) and one line instead of crashing a writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.core.text import one_line, text_problem, writable
from harness.datasets.fields import text_problem as dataset_check
from harness.run.outputs import json_line


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("plain ascii", None),
        ("Zürich, 東京, emoji 🙂", None),
        ("Paris \ud800 text", "contains a lone surrogate (\\ud800)"),
        ("tail \udfff", "contains a lone surrogate (\\udfff)"),
        ("pair \ud83d\ude00 joined", "contains a lone surrogate (\\ud83d)"),  # unjoined pair
    ],
)
def test_text_problem_names_the_first_lone_surrogate(text: str, problem: str | None) -> None:
    got = text_problem(text)
    assert (got is None) if problem is None else (got is not None and got.startswith(problem))
    assert dataset_check is text_problem  # the datasets' check is this one


def test_writable_replaces_only_lone_surrogates() -> None:
    assert writable("a\ud800b\udc00c") == "a\ufffdb\ufffdc"
    assert writable("Zürich 🙂") == "Zürich 🙂"
    assert writable("a\ud800b").encode("utf-8") == "a\ufffdb".encode()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model\nname", "model name"),
        ("a\r\n\r\nb", "a b"),
        ("x\u2028y\u2029z", "x y z"),
        ("esc\x1b[31mred", "esc [31mred"),
        ("  padded\n", "padded"),
        ("bad\ud800", "bad\ufffd"),
    ],
)
def test_one_line_never_splits_an_error_line(text: str, expected: str) -> None:
    assert one_line(text) == expected
    assert len(one_line(text).splitlines()) == 1


def test_a_judges_reason_with_a_lone_surrogate_is_written_not_a_crash(tmp_path: Path) -> None:
    line = json_line({"id": "s1", "reasons": ["useful \ud800 passage"]})
    path = tmp_path / "rows.jsonl"
    path.write_text(line + "\n", "utf-8")  # would raise UnicodeEncodeError before
    assert json.loads(path.read_text("utf-8"))["reasons"] == ["useful \ufffd passage"]


@pytest.mark.parametrize("where", ["system", "user"])
def test_a_prompt_file_holding_a_lone_surrogate_is_refused_by_name(
    tmp_path: Path, where: str
) -> None:
    from harness.prompts.template import PromptFile

    system = "You judge passages.\\ud800" if where == "system" else "You judge passages."
    user = "{{ question }} {{ answer }} {{ context }}" + (" \\udc01" if where == "user" else "")
    path = tmp_path / "mine.yaml"
    path.write_text(f'version: mine_v1\nmode: pointwise\nsystem: "{system}"\nuser: "{user}"\n',
                    "utf-8")
    with pytest.raises(ConfigError) as e:
        PromptFile(str(path))
    assert f"({where}): the text contains a lone surrogate" in str(e.value)
