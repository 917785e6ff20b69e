"""A labels file that cannot give labels is refused when the parts are built: one line,
exit 2, before any output is written, before the MLflow run starts and before any request
to the judge (the project's test judge counts them). A sheet saved the way spreadsheets
save it in other locales (``;``, a byte-order mark) is read as the comma one."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from helpers.judge_server import JudgeServer
from helpers.labelled_run import K, label_rows, truth, write_dataset

pytest.importorskip("ppi_py")

N = 10


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("refusals")
    human = truth(N, seed=2)
    data = write_dataset(folder, human)
    texts = {f"text of chunk d{sid}-{r} " + "word " * 80: v
             for sid, vs in human.items() for r, v in enumerate(vs)}
    with JudgeServer(texts) as server:
        yield {"human": human, "data": data, "server": server}


def table(rows: list[dict[str, Any]], delimiter: str = ",", bom: str = "") -> str:
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, list(rows[0]), delimiter=delimiter)
    writer.writeheader()
    writer.writerows(rows)
    return bom + out.getvalue()


def labelled(world: Any, tmp_path: Path, labels: Path, *more: str, **env: str) -> Any:
    server = world["server"]
    server.reset_stats()
    return run_cli("dataset=jsonl", f"dataset.path={world['data']}",
                   "metric=llm_with_reference", "judge=local",
                   f"judge.base_url={server.base_url}", "judge.model=test-judge",
                   "run.report=false", f"run.human_labels={labels}", *more, cwd=tmp_path,
                   env=env)


def renamed(rows: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    return [{(new if k == old else k): v for k, v in r.items()} for r in rows]


def cases() -> list[tuple[str, Any, str]]:
    """(file name, its text from the label rows, the fragment of the one line)."""
    def csv_renamed(old: str, new: str) -> Any:
        return lambda rows: table(renamed(rows, old, new))

    def jsonl_renamed(old: str, new: str) -> Any:
        return lambda rows: "".join(json.dumps(r) + "\n" for r in renamed(rows, old, new))

    meant = "is not a column the labels file reads; did you mean"
    return [  # one of each class; tests/confidence/test_labels_columns.py has the others
        ("l.csv", csv_renamed("relevant", "relevance"), f"field 'relevance': {meant} 'relevant'?"),
        ("l.csv", csv_renamed("context_id", "doc_id"), f"field 'doc_id': {meant} 'context_id'?"),
        ("l.jsonl", jsonl_renamed("relevant", "relevent"),
         f"field 'relevent': {meant} 'relevant'?"),
        ("l.csv", lambda rows: table([{k: v for k, v in r.items() if k != "relevant"}
                                      for r in rows]),
         "field 'relevant': missing: no 'relevant' column (nor 'grade') for the verdicts"),
        ("l.csv", lambda rows: table([dict(r, relevant="") for r in rows]),
         f"none of the {2 * K} rows of "),
        ("l.csv", lambda rows: table(rows, delimiter="\t").encode("utf-16").decode("latin-1"),
         "is UTF-16 (its byte-order mark says so); save it as UTF-8"),
    ]


@pytest.mark.parametrize(("name", "make", "said"), cases())
def test_labels_that_cannot_be_read_are_refused_before_any_work(
        world: Any, tmp_path: Path, name: str, make: Any, said: str) -> None:
    import mlflow

    rows = label_rows(world["human"], sorted(world["human"])[:2])
    labels = tmp_path / name
    labels.write_bytes(make(rows).encode("latin-1" if "UTF-16" in said else "utf-8"))
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = labelled(world, tmp_path, labels, MLFLOW_TRACKING_URI=store)
    assert result.returncode == 2, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("error: ") and said in line, line
    assert str(labels) in line
    assert not result.out_dir.exists() or not any(
        (result.out_dir / f).exists() for f in ("samples.jsonl", "summary.json",
                                                "samples.jsonl.partial"))
    assert world["server"].stats.requests == 0
    if (tmp_path / "mlflow.db").exists():
        client = mlflow.MlflowClient(store)
        assert client.search_runs([e.experiment_id for e in client.search_experiments()]) == []


@pytest.mark.slow
def test_a_sheet_saved_with_semicolons_reads_as_the_comma_one(world: Any,
                                                               tmp_path: Path) -> None:
    """As a spreadsheet saves CSV where the decimal separator is a comma: ``;`` between
    cells, a byte-order mark first."""
    rows = label_rows(world["human"], sorted(world["human"])[:5])
    for r in rows:
        r["note"] = "a, b"  # a comma inside a cell of a ; sheet
    comma, other = tmp_path / "comma.csv", tmp_path / "other.csv"
    comma.write_text(table(rows), encoding="utf-8")
    other.write_text(table(rows, ";", "\ufeff"), encoding="utf-8", newline="")
    a = labelled(world, tmp_path, comma, "tracking=none")
    b = labelled(world, tmp_path, other, "tracking=none")
    assert (a.returncode, b.returncode) == (0, 0), (a.stderr, b.stderr)
    block_a, block_b = a.summary()["confidence"], b.summary()["confidence"]
    assert block_a["n_labelled"] == block_b["n_labelled"] == 5
    assert block_a["ci"] == block_b["ci"] and block_a["mean"] == block_b["mean"]
