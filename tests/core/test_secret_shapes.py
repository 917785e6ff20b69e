"""Every override shape Hydra reads survives the hiding of secrets (``harness.core.secrets``):
under each secret-looking name, the hidden override resolves to exactly the value the typed
one does (lists, mappings, quoted text with ``=``/``,``/``]``/``}``/quotes inside, numbers,
``+``/``++``, sweeps of every form), and no secret is left in the text Hydra writes. The
override ``retriever.auth=[user,password]`` used to be rewritten into
``${oc.decode:${oc.env:...}}``, which Hydra's grammar cannot read unquoted: the run was
refused as "Hydra cannot read '}' ... quote the value" though the user's override was right.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from helpers.user_code import user_package
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from harness.core.redact import MASK
from harness.core.secrets import hide, reveal

NAMES = ["retriever.api_key", "retriever.password", "retriever.token", "retriever.auth",
         "retriever.client_secret", "retriever.headers.Authorization", "+retriever.token",
         "++retriever.kwargs.auth"]

#: (value as typed, its secrets: texts that must not be left in the hidden override)
VALUES = [
    ("[user,pa55word]", ["user", "pa55word"]),
    ("[user, 'pass,w]rd']", ["user", "pass,w]rd"]),
    ("{user: alice9, pass: 'x=y}z'}", ["alice9", "x=y}z"]),
    ("[[a1b2c3, d4e5f6], {k: g7h8i9}]", ["a1b2c3", "d4e5f6", "g7h8i9"]),
    ("sk-live-0123456789", ["sk-live-0123456789"]),
    ("'quoted, with = and ] and }'", ["quoted, with = and ] and }"]),
    ('"it\'s a \\"secret\\""', ["it's"]),
    ("'Bearer sk-abcdef0123'", ["sk-abcdef0123"]),
    ("987654321", ["987654321"]),
    ("3.25e7", ["3.25e7"]),
    ("two words", ["two words"]),
]

#: Sweeps (``-m``): each element hidden on its own, so each job gets its own value.
SWEEPS = [
    ("tok0001a,tok0002b", ["tok0001a", "tok0002b"]),
    ("choice(tok0001a,'tok,0002b')", ["tok0001a", "tok,0002b"]),
    ("[u1x,p1x],[u2x,p2x]", ["u1x", "p1x", "u2x", "p2x"]),
    ("shuffle(tok0001a,tok0002b)", ["tok0001a", "tok0002b"]),
    ("tag(mine,choice(tok0001a,tok0002b))", ["tok0001a", "tok0002b"]),
]


@pytest.fixture(autouse=True)
def _secrets(clean_secrets: None) -> None:
    """No registered secret and no hidden value before the test (``conftest``)."""


def resolved(arg: str) -> Any:
    """What the job's config holds for one override, as Hydra applies it: the value set
    under its key, interpolations (the hidden references) resolved; a sweep: each job's."""
    override = OverridesParser.create().parse_override(arg)
    if override.is_sweep_override():
        key = arg.partition("=")[0]
        return [resolved(f"{key}={one}") for one in override.sweep_string_iterator()]
    cfg = OmegaConf.create({})
    OmegaConf.update(cfg, override.key_or_group, override.value(), merge=True, force_add=True)
    return OmegaConf.to_container(cfg, resolve=True)


def secrets_left(hidden: str, secrets: list[str]) -> list[str]:
    return [s for s in secrets if s in hidden]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("value", "secrets"), VALUES)
def test_each_shape_under_each_secret_name_resolves_as_typed(
        name: str, value: str, secrets: list[str]) -> None:
    typed = f"{name}={value}"
    [hidden] = hide([typed])
    assert hidden != typed
    assert secrets_left(hidden, secrets) == []
    assert resolved(hidden) == resolved(typed)  # the same value, type and shape


@pytest.mark.parametrize(("value", "secrets"), SWEEPS)
def test_a_sweep_of_secrets_stays_a_sweep_of_the_same_values(
        value: str, secrets: list[str]) -> None:
    typed = f"retriever.token={value}"
    [hidden] = hide([typed])
    assert secrets_left(hidden, secrets) == []
    jobs = sorted(map(json.dumps, resolved(hidden)))  # (shuffle() draws the order anew)
    assert jobs == sorted(map(json.dumps, resolved(typed)))
    assert len(jobs) == 2 and jobs[0] != jobs[1]


@pytest.mark.parametrize("arg", [
    "retriever.api_key=${oc.env:MY_KEY}",  # a reference: where the key is, not what
    "retriever.api_key=null", "retriever.api_key=", "retriever.token=true",
    "retriever.token=range(1,4)", "retriever.token=interval(0,1)",
    "judge.api_key_env=MY_KEY", "judge.max_tokens=64", "retriever.kwargs={k: 5, f: [a, b]}",
    "~retriever.api_key", "auth@retriever=basic",  # a group choice: an option's name
    "judge.base_url=http://u:${oc.env:PW}@h/v1",
])
def test_what_holds_no_secret_to_hide_is_left_as_typed(arg: str) -> None:
    assert hide([arg]) == [arg]


def test_a_deletion_with_a_value_keeps_the_deletion_without_the_value() -> None:
    assert hide(["~retriever.api_key=sk-live-0123456789"]) == ["~retriever.api_key"]
    assert hide(["~retriever.auth=[user,pa55word]"]) == ["~retriever.auth"]


def test_interpolations_beside_secrets_still_resolve_and_credentials_in_urls_show_their_host(
        ) -> None:
    typed = "retriever.kwargs={auth: [u1, p4ssword9], url: '${oc.env:HOME}', n: 2}"
    [hidden] = hide([typed])
    assert "p4ssword9" not in hidden and "${oc.env:HOME}" in hidden
    assert resolved(hidden) == resolved(typed)
    assert reveal(hidden) == "retriever.kwargs={auth: [***, ***], url: '${oc.env:HOME}', n: 2}"
    [uri] = hide(["tracking.tracking_uri=http://al:pw0123456@h:5000,http://bo:pw9876543@h:5001"])
    assert reveal(uri) == "tracking.tracking_uri=http://***@h:5000,http://***@h:5001"
    assert "pw0123456" not in uri and "pw9876543" not in uri


def test_a_value_hydra_cannot_read_is_left_for_the_syntax_check_but_masked_there(
        tmp_path: Path) -> None:
    result = run_cli("retriever.api_key=ab=cd-0123456789", "tracking=none", cwd=tmp_path)
    assert result.returncode == 1
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("error: retriever.api_key: Hydra cannot read '=' in an unquoted value")
    assert "0123456789" not in line and MASK in line


CODE = """
    import json
    from pathlib import Path

    from harness.core.types import Hit
    from harness.retrievers.search import SearchRetriever

    class Keyed(SearchRetriever):
        def __init__(self, top_k=None, **settings):
            super().__init__(top_k)
            with open(Path(__file__).parent / "got.jsonl", "a") as f:  # what the user's code got
                f.write(json.dumps(settings) + "\\n")

        def search(self, queries):
            return [[Hit(id="d1", text="t", score=1.0)] for _ in queries]
"""
TYPED = ["retriever.auth=[user,pa55word]", "retriever.password=987654321",
         "retriever.headers={Authorization: 'Bearer sk-abcdef0123', Accept: json}",
         "retriever.token='a=b,c]d}e'", "retriever.client_secret=sk-live-0123456789"]
SECRETS = ["pa55word", "987654321", "sk-abcdef0123", "a=b,c]d}e", "sk-live-0123456789"]


def run_keyed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[Any, Path]:
    name = user_package(tmp_path, monkeypatch, "keyed", search=CODE)
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "q1", "user_input": "a", "reference_context_ids": ["d1"]}\n')
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Keyed",
                     f"trusted_targets=[{name}.*]", "metric=id_ranked", "dataset=jsonl",
                     f"dataset.path={data}", "tracking=none", "run.report=false", *args,
                     cwd=tmp_path)
    return result, tmp_path / name / "got.jsonl"


def leaks(folder: Path, *texts: str) -> list[str]:
    found = [f"console: {s}" for s in SECRETS for t in texts if s in t]
    return found + [f"{p}: {s}" for p in folder.rglob("*") if p.is_file()
                    for s in SECRETS if s.encode() in p.read_bytes()]


def test_a_list_a_mapping_and_a_number_under_secret_names_reach_the_users_code_as_typed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, got = run_keyed(tmp_path, monkeypatch, *TYPED)
    assert result.returncode == 0, result.stderr
    assert [json.loads(x) for x in got.read_text().splitlines()] == [{
        "auth": ["user", "pa55word"], "password": 987654321,
        "headers": {"Authorization": "Bearer sk-abcdef0123", "Accept": "json"},
        "token": "a=b,c]d}e", "client_secret": "sk-live-0123456789"}]
    assert leaks(result.out_dir, result.stdout, result.stderr) == []


@pytest.mark.slow
def test_a_sweep_of_secret_lists_runs_one_job_per_value_and_writes_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sweep = tmp_path / "sweep"
    result, got = run_keyed(tmp_path, monkeypatch, "-m",
                            "retriever.auth=[u1,pa55word],[u2,pb66word]",
                            f"hydra.sweep.dir={sweep}")
    assert result.returncode == 0, result.stderr
    assert sorted(json.loads(x)["auth"] for x in got.read_text().splitlines()) == [
        ["u1", "pa55word"], ["u2", "pb66word"]]
    files = [p for p in sweep.rglob("*") if p.is_file()]
    assert not [p for p in files if b"pa55word" in p.read_bytes() or b"pb66word" in p.read_bytes()]
    assert "pa55word" not in result.stdout + result.stderr


@pytest.mark.slow
def test_the_secret_shapes_reach_no_mlflow_field_nor_artifact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    store.mkdir()
    uri = f"sqlite:///{store / 'mlflow.db'}"
    name = user_package(tmp_path, monkeypatch, "keyed", search=CODE)
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "q1", "user_input": "a", "reference_context_ids": ["d1"]}\n')
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Keyed",
                     f"trusted_targets=[{name}.*]", "metric=id_ranked", "dataset=jsonl",
                     f"dataset.path={data}", "experiment_name=shapes", *TYPED, cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": uri,
                          "MLFLOW_ARTIFACTS_DESTINATION": str(store / "art")})
    assert result.returncode == 0, result.stderr
    assert "mlflow run" in result.stdout  # it was logged
    assert leaks(result.out_dir, result.stdout, result.stderr) == []
    # the run's files were logged as artifacts, a copy beside the run folder's
    assert len([p for p in tmp_path.rglob("summary.json")]) >= 2
    found = leaks(tmp_path)  # the run folder, the store and its artifacts
    assert [x for x in found if f"{name}/got.jsonl" not in x] == []  # (what the code got)
