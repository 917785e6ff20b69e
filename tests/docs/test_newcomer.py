"""What a newcomer tripped over (issue 15, item 9): ragas's JSON files, Hydra's errors in
the CLI and the Python API, ``experiment=`` without ``-m``, a fully cached run's judge
line, the cache command's path option, the agreement summary's decimals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_DATA, run_cli, shared_data
from helpers.judge_server import JudgeServer

from harness import evaluate
from harness.core.errors import ConfigError
from harness.datasets.json_doc import JsonDataset

AMNESTY = TEST_DATA / "ragas_amnesty_qa" / "english_5.json"
EPS = 1e-10  # llm_with_reference's eps (ragas's)


def amnesty() -> dict[str, list[Any]]:
    data: dict[str, list[Any]] = json.loads(AMNESTY.read_text("utf-8"))
    return data


def judge_args(server: JudgeServer) -> tuple[str, ...]:
    return ("judge=local", f"judge.base_url={server.base_url}", "judge.model=test-judge")


# -- 1. ragas's JSON files ----------------------------------------------------------------


def test_ragas_column_oriented_file_scores_end_to_end(tmp_path: Path) -> None:
    data = amnesty()
    # the relevant chunk of row i is chunk i % 3: verdicts [1,0,0], [0,1,0], [0,0,1], ...
    labels: dict[str | tuple[str, str], int | float] = {
        (q, c): int(k == i % 3)
        for i, (q, chunks) in enumerate(zip(data["question"], data["contexts"], strict=True))
        for k, c in enumerate(chunks)
    }
    with JudgeServer(labels) as server:
        args = ("dataset=json", f"dataset.path={AMNESTY}", "metric=llm_with_reference",
                *judge_args(server), "tracking=none")
        first = run_cli(*args, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        assert server.stats.unknown_chunks == 0 and server.stats.requests == 15
        again = run_cli(*args, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert server.stats.requests == 15  # all from the cache
    # average precision with one relevant chunk at rank r: (1/r) / (1 + eps)
    expected = [(1 / r) / (1 + EPS) for r in (1, 2, 3, 1, 2)]
    for result in (first, again):
        assert [row["score"] for row in result.rows()] == expected
        assert [row["id"] for row in result.rows()] == ["0", "1", "2", "3", "4"]
    assert again.summary()["dataset"]["sha256"] == first.summary()["dataset"]["sha256"]
    # item 4: a fully cached run names its answers, not "0 requests"
    judge_line = next(x for x in again.stdout.splitlines() if x.strip().startswith("judge"))
    assert "15 answers from the cache" in judge_line and "0 requests" not in judge_line
    first_line = next(x for x in first.stdout.splitlines() if x.strip().startswith("judge"))
    assert "15 requests" in first_line and "from the cache" not in first_line


def test_every_json_shape_reads_the_same_records(tmp_path: Path) -> None:
    data = amnesty()
    rows = [{k: data[k][i] for k in data} for i in range(5)]
    one_line = tmp_path / "one_line.json"  # json.dump without indent
    one_line.write_text(json.dumps(data), "utf-8")
    listed = tmp_path / "records.json"
    listed.write_text(json.dumps(rows, indent=2), "utf-8")
    lines = tmp_path / "hf.jsonl"  # Hugging Face Dataset.to_json: JSON lines
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    by_row = {str(i): r for i, r in enumerate(rows)}
    pandas = tmp_path / "pandas.json"  # DataFrame.to_json(): columns keyed by row
    pandas.write_text(json.dumps({k: {i: r[k] for i, r in by_row.items()} for k in data}))
    current = tmp_path / "v02.json"  # ragas v0.2 names, by columns
    current.write_text(json.dumps({
        "user_input": data["question"], "response": data["answer"],
        "retrieved_contexts": data["contexts"],
        "reference": [g[0] for g in data["ground_truths"]],
    }))
    for path in (AMNESTY, one_line, listed, lines, pandas, current):
        samples = list(JsonDataset(path).samples())
        assert [s.user_input for s in samples] == data["question"], path
        assert [s.response for s in samples] == data["answer"], path
        assert [list(s.retrieved_contexts or ()) for s in samples] == data["contexts"], path
        # ragas's legacy list of answers: its first becomes the reference, as ragas does
        assert [s.reference for s in samples] == [g[0] for g in data["ground_truths"]], path
        assert [s.id for s in samples] == ["0", "1", "2", "3", "4"], path
        assert len(list(JsonDataset(path).samples(limit=2))) == 2


@pytest.mark.shared_data("ragas_amnesty_qa")
def test_the_shared_amnesty_file_reads_whole() -> None:
    AMNESTY_FULL = shared_data("ragas_amnesty_qa") / "english.json"
    data = json.loads(AMNESTY_FULL.read_text("utf-8"))
    samples = list(JsonDataset(AMNESTY_FULL).samples())
    assert len(samples) == 20 == len(data["question"])
    assert [s.reference for s in samples] == [g[0] for g in data["ground_truths"]]
    assert sum(len(s.retrieved_contexts or ()) for s in samples) == 60
    assert amnesty() == {k: v[:5] for k, v in data.items()}  # the shipped cut: its first 5 rows


def test_ground_truths_first_answer_also_in_jsonl_and_csv(tmp_path: Path) -> None:
    from harness.datasets.files import CsvDataset, JsonlDataset

    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text(json.dumps({"question": "q", "ground_truths": ["first", "second"],
                                 "contexts": ["c"]}) + "\n")
    csv = tmp_path / "d.csv"  # ragas's to_csv writes lists as Python reprs
    csv.write_text("question,contexts,ground_truths\nq,['c'],\"['first', 'second']\"\n")
    both = tmp_path / "both.jsonl"  # a ground_truth (one string) wins, as in ragas
    both.write_text(json.dumps({"question": "q", "ground_truth": "single",
                                "ground_truths": ["first"]}) + "\n")
    empty = tmp_path / "empty.jsonl"  # no answer at all: no reference (unscored, with why)
    empty.write_text(json.dumps({"question": "q", "ground_truths": []}) + "\n")
    for dataset, expected in ((JsonlDataset(jsonl), "first"), (CsvDataset(csv), "first"),
                              (JsonlDataset(both), "single"), (JsonlDataset(empty), None)):
        assert [s.reference for s in dataset.samples()] == [expected], dataset.path
    result = evaluate([{"question": "Where?", "ground_truths": ["Paris", "France"],
                        "contexts": ["Paris", "Rome"]}], "non_llm",
                      overrides=["metric.eps=0"], fields={"reference_contexts": "ground_truths"})
    assert result.scores == [1.0]  # the list maps to reference_contexts when asked to


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        ({"question": ["a", "b"], "contexts": [["x"]]},
         ["columns 'question' (2 values) and 'contexts' (1 values) differ in length"]),
        ({"question": ["a"], "contexts": [["x"]], "version": 2},
         ["column 'version' is not a list (it holds 2)"]),
        ([{"question": "a", "ground_truths": "x"}],
         ["row 1: field 'ground_truths': expected a list of reference answers, got a string"]),
        ([{"question": "a"}, {"question": 3}], ["row 2: field 'user_input': expected a string"]),
        ("[1,\n2,,]", ["bad.json:2: not valid JSON"]),
        (3, ["expected an object of columns, a list of records or JSON lines, got int"]),
    ],
)
def test_bad_json_file_is_one_line(tmp_path: Path, content: object, fragments: list[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content if isinstance(content, str) else json.dumps(content), "utf-8")
    result = run_cli("dataset=json", f"dataset.path={bad}", "tracking=none", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}"), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_jsonl_reader_points_a_json_document_at_dataset_json(tmp_path: Path) -> None:
    result = run_cli("dataset=jsonl", f"dataset.path={AMNESTY}", "tracking=none", cwd=tmp_path)
    assert result.returncode == 2
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "read it with dataset=json" in lines[0], result.stderr
    assert lines[0].startswith(f"error: {AMNESTY}:")


# -- 2. Hydra's errors: the hint first, and ours from the Python API ----------------------


def test_a_typo_is_one_line_with_the_did_you_mean(tmp_path: Path) -> None:
    """Not the hint and then Hydra's dozen lines (its listing and its config search path)."""
    result = run_cli("metric=id_basd", "tracking=none", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: 'id_basd' is not a metric option (did you mean 'id_based'?); the options: "
        "contextual_precision, id_based, id_ranked, llm_with_reference, "
        "llm_without_reference, non_llm"]
    result = run_cli("run.limt=3", "tracking=none", cwd=tmp_path)
    [line] = result.stderr.splitlines()
    assert line.startswith("error: 'run.limt' is not a setting (did you mean 'limit'?)")
    assert result.returncode == 1
    result = run_cli("metric=id_based", "run.limit=[1", "tracking=none", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [  # one line of ours, not Hydra's parser dump
        "error: run.limit=[1: a bracket is not closed; close it, or quote the whole setting "
        "if it holds spaces ('run.limit=[1 ...')"]


@pytest.mark.parametrize(
    ("metric", "overrides", "message"),
    [
        ("id_basd", [], "'id_basd' is not a metric option (did you mean 'id_based'?) "
                        "[In 'config': Could not find 'metric/id_basd']"),
        ("id_based", ["run.limt=3"], "'run.limt' is not a setting (did you mean 'limit'?)"),
        ("id_based", ["metrc=x"], "'metrc' is not a config group (did you mean 'metric'?)"),
        ("id_based", ["run.limit=[1"], "run.limit=[1: a bracket is not closed"),
    ],
)
def test_python_api_raises_our_config_error(
    metric: str, overrides: list[str], message: str
) -> None:
    samples = [{"user_input": "q", "retrieved_context_ids": ["a"],
                "reference_context_ids": ["a"]}]
    with pytest.raises(ConfigError) as caught:
        evaluate(samples, metric, overrides=overrides)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert evaluate(samples, "id_based").mean == 1.0  # and the API still works after


# -- 3. experiment= without -m --------------------------------------------------------------


def test_experiment_without_multirun_says_so(tmp_path: Path) -> None:
    # the experiment's retriever and sweep on the BEIR fixture (SciFact's layout)
    result = run_cli("experiment=scifact_chunking", f"dataset.path={TEST_DATA / 'beir_tiny'}",
                     "dataset.limit=2", "tracking=none", "retriever.cache=false", cwd=tmp_path)
    note = ("note: experiment=scifact_chunking defines a sweep (retriever.chunk_size, "
            "retriever.chunk_overlap); add -m to run it")
    assert result.stderr.splitlines()[0].startswith(note), result.stderr
    assert result.returncode == 0 and result.summary()["n_samples"] == 2  # the one job ran
    plain = run_cli("metric=id_based", "tracking=none", cwd=tmp_path)
    assert "note:" not in plain.stderr and plain.returncode == 0


# -- 5. the cache command's path: the run's name for it --------------------------------------


@pytest.mark.parametrize(
    "spelling", [["--cache-path", "{p}"], ["--path", "{p}"], ["judge.cache_path={p}"],
                 ["info", "--cache-path", "{p}"]],
)
def test_cache_command_takes_the_runs_setting_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: list[str]
) -> None:
    from harness.cli.cache import main
    from harness.judges.cache.sqlite import VerdictCache

    path = tmp_path / "verdicts.sqlite"
    VerdictCache(path).close()
    args = [a.format(p=path) for a in spelling]
    code = main([*args, "--json"] if args[0] == "info" else [*args, "info", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["path"] == str(path)
    assert main(["info", "--cache-path", ""]) == 2
    assert "error: --cache-path is empty" in capsys.readouterr().err


def test_cache_help_names_both_spellings(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli.cache import main

    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--cache-path PATH, --path PATH" in text and "judge.cache_path=FILE" in text


# -- 6. the agreement summary's decimals ---------------------------------------------------


def test_agreement_console_rounds_every_rate(tmp_path: Path) -> None:
    trec = TEST_DATA / "trec_dl19_tiny"  # a cut of the full set (its SOURCE.md)
    corpus = [json.loads(x) for x in (trec / "corpus.jsonl").open()]
    # the judge calls every passage relevant except a known third of them
    labels = {(d["title"] + "\n\n" + d["text"] if d["title"] else d["text"]): int(i % 3 != 0)
              for i, d in enumerate(corpus)}
    with JudgeServer(labels) as server:
        result = run_cli("task=judge_agreement", "dataset=trec_dl19", f"dataset.path={trec}",
                         "dataset.limit=2",
                         "task.pairs_per_query=7", "task.min_grade=2", *judge_args(server),
                         "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((result.out_dir / "summary.json").read_text())
    line = next(x for x in result.stdout.splitlines() if "judge agreement over" in x)
    for name in ("accuracy", "kappa", "precision", "recall"):
        value = summary["cohen_kappa" if name == "kappa" else name]
        assert f"{name} {value:.3f}" in line, line
    # the file keeps full precision: recompute precision from the rows by hand
    rows = [json.loads(x) for x in (result.out_dir / "agreement.jsonl").read_text().splitlines()]
    tp = sum(r["judge"] == 1 and r["human"] == 1 for r in rows)
    fp = sum(r["judge"] == 1 and r["human"] == 0 for r in rows)
    assert summary["precision"] == tp / (tp + fp)
