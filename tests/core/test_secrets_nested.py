"""Issue 31, class 6: secrets inside a mapping or list setting
(``'retriever.kwargs={api_key: ..., headers: {Authorization: "Bearer ..."}, auth: [u, pw]}'``),
secret-named settings of other names (``Authorization``, ``private_key``, ``auth``) and
credentials in free text (``Bearer ...``, a PEM key, ``?sig=``) reach no file the run
writes: Hydra's ``.hydra/*.yaml`` and a sweep's ``multirun.yaml`` included. The user's code
still gets the real values."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import run_cli
from helpers.user_code import user_package

from harness.core.hydra_files import redact_file
from harness.core.redact import MASK, redact, redact_tree, register_tree, secret_key
from harness.core.secrets import hide, reveal

TAG = "5e3c1a9f"  # fixed: parametrize ids must be the same in every xdist worker
KEY = f"K9key{TAG}"
BEARER = f"sk-bearer{TAG}"
PASSWORD = f"pw-auth{TAG}"
SECRETS = (KEY, BEARER, PASSWORD)


@pytest.fixture(autouse=True)
def _secrets(clean_secrets: None) -> None:
    """No registered secret and no hidden value before the test (``conftest``)."""


@pytest.mark.parametrize(
    ("name", "secret"),
    [("Authorization", True), ("headers.Authorization", True), ("private_key", True),
     ("privateKey", True), ("auth", True), ("basic_auth", True), ("X-Api-Key", True),
     ("passphrase", True), ("aws_secret_access_key", True), ("Cookie", True),
     ("auth_type", False), ("key_path", False), ("sort_key", False), ("password_file", False),
     ("private_key_path", False), ("token_url", False), ("auth_header", False), ("key", False),
     ("id_key", False), ("api_key_env", False), ("max_tokens", False)],
)
def test_more_secret_named_settings(name: str, secret: bool) -> None:
    assert secret_key(name) is secret


@pytest.mark.parametrize(
    ("text", "expected"),
    [(f"Authorization: Bearer {BEARER}", "Authorization: Bearer ***"),
     ("auth: Basic dXNlcjpwYXNz", "auth: Basic ***"),
     ("Bearer instruments and Basic information", "Bearer instruments and Basic information"),
     ("-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY----- tail", "*** tail"),
     ("https://b.blob/x?sv=2020&sig=AbC%2F123&se=1", "https://b.blob/x?sv=2020&sig=***&se=1"),
     ("https://s3/x?X-Amz-Signature=abc123&X-Amz-Date=2024",
      "https://s3/x?X-Amz-Signature=***&X-Amz-Date=2024"),
     ("https://maps/api?key=AIzaSy123&q=paris", "https://maps/api?key=***&q=paris"),
     ("https://app/cb#access_token=tok999&state=1", "https://app/cb#access_token=***&state=1"),
     ("https://h/doc?page=2&sort=asc", "https://h/doc?page=2&sort=asc")],
)
def test_credentials_found_in_free_text(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_every_value_under_a_secret_key_is_masked_and_registered() -> None:
    tree = {"kwargs": {"auth": ["alice", PASSWORD], "password": 123456789,
                       "headers": {"Authorization": f"Bearer {BEARER}", "Accept": "json"},
                       "api_key": "${oc.env:MY_KEY}", "token": None, "k": 5}}
    assert redact_tree(tree) == {"kwargs": {
        "auth": [MASK, MASK], "password": MASK,
        "headers": {"Authorization": MASK, "Accept": "json"},
        "api_key": "${oc.env:MY_KEY}",  # a reference says where the key is, not what
        "token": None, "k": 5}}
    register_tree(tree)
    # "alice" is shorter than a secret that free text may be searched for (MIN_SECRET)
    assert redact(f"user alice, {PASSWORD}, 123456789") == "user alice, ***, ***"


def test_a_mapping_override_keeps_its_shape_with_each_secret_hidden() -> None:
    arg = (f'retriever.kwargs={{api_key: {KEY}, headers: {{Authorization: "Bearer {BEARER}"}},'
           f" auth: [alice, {PASSWORD}], k: 10}}")
    [hidden] = hide([arg])
    assert not any(s in hidden for s in SECRETS)
    assert hidden.startswith("retriever.kwargs={api_key: ${oc.env:HARNESS_SECRET_")
    assert hidden.endswith(", k: 10}")  # what is no secret stays readable
    # every scalar under a secret-named key is hidden, the short user name too
    assert reveal(hidden) == ("retriever.kwargs={api_key: ***, headers: {Authorization: ***}, "
                              "auth: [***, ***], k: 10}")
    # an escaped quote inside a secret: hidden in place too, the mapping read as Hydra reads it
    [quoted] = hide([f"retriever.kwargs={{token: 'it\\'s-{KEY}', k: 1}}"])
    assert quoted.startswith("retriever.kwargs={token: ${oc.env:HARNESS_SECRET_")
    assert reveal(quoted) == "retriever.kwargs={token: ***, k: 1}" and KEY not in quoted
    # a list under a secret-named key stays a list, each element a reference Hydra reads
    [pair] = hide([f"retriever.kwargs.auth=[alice, {PASSWORD}]"])
    assert pair.startswith("retriever.kwargs.auth=[${oc.env:") and PASSWORD not in pair
    assert hide(["retriever.kwargs={k: 5, fields: [a, b]}"]) == [
        "retriever.kwargs={k: 5, fields: [a, b]}"]  # nothing to hide: as given


def test_redact_file_rewrites_a_hydra_file_in_place(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"retriever": {"kwargs": {
        "private_key": "-----BEGIN PRIVATE KEY-----abc", "url": f"http://u:{PASSWORD}@h/x",
        "env": "${oc.env:HOME}"}}}))
    assert redact_file(path) is True
    assert yaml.safe_load(path.read_text()) == {"retriever": {"kwargs": {
        "private_key": MASK, "url": "http://***@h/x", "env": "${oc.env:HOME}"}}}
    assert redact_file(path) is False  # nothing left: not rewritten
    assert redact_file(tmp_path / "missing.yaml") is False


CODE = f"""
    from harness.core.types import Hit
    from harness.retrievers.search import SearchRetriever

    EXPECTED = {{"api_key": "{KEY}", "headers": {{"Authorization": "Bearer {BEARER}"}},
                "auth": ["alice", "{PASSWORD}"], "k": 10}}

    class Keyed(SearchRetriever):
        def __init__(self, kwargs=None, top_k=None):
            super().__init__(top_k)
            if dict(kwargs) != EXPECTED:  # the user's code gets the real values
                raise ValueError("kwargs differ: " + str(kwargs))

        def search(self, queries):
            return [[Hit(id="d1", text="t", score=1.0)] for _ in queries]
"""
KWARGS = (f'retriever.kwargs={{api_key: {KEY}, headers: {{Authorization: "Bearer {BEARER}"}}, '
          f"auth: [alice, {PASSWORD}], k: 10}}")


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    name = user_package(tmp_path, monkeypatch, "kwargs", search=CODE)
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "q1", "user_input": "a", "reference_context_ids": ["d1"]}\n'
                    '{"id": "q2", "user_input": "b", "reference_context_ids": ["d2"]}\n')
    return name, data


def leaks(folder: Path, *texts: str) -> list[str]:
    found = [f"console: {s}" for s in SECRETS for t in texts if s in t]
    return found + [f"{p}: {s}" for p in folder.rglob("*") if p.is_file()
                    for s in SECRETS if s.encode() in p.read_bytes()]


def test_secrets_in_a_mapping_setting_reach_no_file_of_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name, data = _setup(tmp_path, monkeypatch)
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Keyed",
                     f"trusted_targets=[{name}.*]", KWARGS, "metric=id_ranked",
                     "dataset=jsonl", f"dataset.path={data}", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.summary()["mean"] == 0.5  # q1 finds its document, q2 does not
    assert leaks(result.out_dir, result.stdout, result.stderr) == []
    hydra_files = {p.name for p in (result.out_dir / ".hydra").iterdir()}
    assert {"config.yaml", "hydra.yaml", "overrides.yaml"} <= hydra_files  # still there
    config = yaml.safe_load((result.out_dir / "config.yaml").read_text())
    assert config["retriever"]["kwargs"] == {"api_key": MASK, "headers": {"Authorization": MASK},
                                             "auth": [MASK, MASK], "k": 10}


@pytest.mark.slow
def test_secrets_in_a_sweep_reach_no_job_folder_nor_multirun_yaml(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name, data = _setup(tmp_path, monkeypatch)
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "retriever=custom", f"retriever._target_={name}.search.Keyed",
                     f"trusted_targets=[{name}.*]", KWARGS, "metric=id_ranked,id_based",
                     "dataset=jsonl", f"dataset.path={data}", "tracking=none",
                     f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(list(sweep.glob("*/summary.json"))) == 2
    assert (sweep / "multirun.yaml").is_file()
    assert leaks(sweep, result.stdout, result.stderr) == []


def test_a_secret_written_in_a_config_file_is_masked_in_hydras_copies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name, data = _setup(tmp_path, monkeypatch)
    (tmp_path / "conf" / "retriever").mkdir(parents=True)
    (tmp_path / "conf" / "retriever" / "mine.yaml").write_text(yaml.safe_dump({
        "_target_": f"{name}.search.Keyed",
        "kwargs": {"api_key": KEY, "headers": {"Authorization": f"Bearer {BEARER}"},
                   "auth": ["alice", PASSWORD], "k": 10}}))
    result = run_cli(f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "retriever=mine",
                     f"trusted_targets=[{name}.*]", "metric=id_ranked", "dataset=jsonl",
                     f"dataset.path={data}", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert leaks(result.out_dir, result.stdout, result.stderr) == []
    saved = yaml.safe_load((result.out_dir / ".hydra" / "config.yaml").read_text())
    assert saved["retriever"]["kwargs"]["auth"] == [MASK, MASK]
    assert saved["retriever"]["kwargs"]["k"] == 10
