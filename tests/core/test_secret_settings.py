"""A secret in a setting of its own (issue 24, class 9): a user's ``retriever.api_key`` (or
``password``, ``token``, ``client_secret``) is masked in every file and line, as URL
credentials are: its value never reaches Hydra's files, config.yaml, summary.json, the
console or an error quoted from the user's code."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.user_code import user_package

from harness.core.redact import MASK, redact, redact_tree, register_tree, secret_key
from harness.core.secrets import hide

KEY = "sk-setting-canary-" + uuid.uuid4().hex[:8]


@pytest.fixture(autouse=True)
def _secrets(clean_secrets: None) -> None:
    """No registered secret and no hidden value before the test (``conftest``)."""


@pytest.mark.parametrize(
    ("name", "secret"),
    [("api_key", True), ("apiKey", True), ("password", True), ("auth_token", True),
     ("client_secret", True), ("retriever.kwargs.db_password", True), ("+retriever.token", True),
     ("api_key_env", False), ("max_tokens", False), ("id_key", False), ("key", False),
     ("prompt_tokens", False)],
)
def test_secret_named_settings(name: str, secret: bool) -> None:
    assert secret_key(name) is secret


def test_redact_tree_masks_secret_named_values_only() -> None:
    tree = {"retriever": {"api_key": KEY, "url": "http://h", "kwargs": {"password": "pw1234567"}},
            "judge": {"api_key_env": "OPENAI_API_KEY", "max_tokens": 100, "token": None}}
    assert redact_tree(tree) == {
        "retriever": {"api_key": MASK, "url": "http://h", "kwargs": {"password": MASK}},
        "judge": {"api_key_env": "OPENAI_API_KEY", "max_tokens": 100, "token": None}}


def test_register_tree_masks_them_in_free_text() -> None:
    register_tree({"retriever": {"kwargs": [{"client_secret": KEY}]}})
    assert redact(f"401 for key {KEY}") == "401 for key ***"


def test_a_secret_setting_on_the_command_line_never_reaches_hydra() -> None:
    args = hide([f"retriever.api_key={KEY}", "judge.api_key_env=MY_KEY", "judge.max_tokens=64",
                 "+retriever.token=${oc.env:TOKEN}"])
    assert args[0].startswith("retriever.api_key=${oc.env:HARNESS_SECRET_") and KEY not in args[0]
    assert args[1:] == ["judge.api_key_env=MY_KEY", "judge.max_tokens=64",
                        "+retriever.token=${oc.env:TOKEN}"]  # a reference already hides it
    assert redact(f"echo {KEY}") == "echo ***"


CODE = """
    from harness.core.types import Hit
    from harness.retrievers.search import SearchRetriever

    class Keyed(SearchRetriever):
        def __init__(self, api_key: str, top_k: int | None = None):
            super().__init__(top_k)
            self.api_key = api_key

        def search(self, queries):
            raise PermissionError(f"the service refused key {self.api_key}")
"""


@pytest.mark.parametrize("shards", ["1", "2"])
def test_a_users_key_in_a_failing_retriever_is_masked_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shards: str
) -> None:
    name = user_package(tmp_path, monkeypatch, "keyed", search=CODE)
    data = tmp_path / "d.jsonl"
    data.write_text("".join(f'{{"id": "q{i}", "user_input": "question {i}", '
                            f'"reference_context_ids": ["d1"]}}\n' for i in range(6)))
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Keyed",
                     f"trusted_targets=[{name}.*]", f"retriever.api_key={KEY}",
                     "metric=id_ranked", "dataset=jsonl", f"dataset.path={data}",
                     "tracking=none", f"run.shards={shards}", cwd=tmp_path,
                     env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 2, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert "search() raised PermissionError: the service refused key ***" in line
    files = "".join(p.read_text("utf-8", "replace") for p in result.out_dir.rglob("*")
                    if p.is_file())
    assert KEY not in result.stderr + result.stdout + files

