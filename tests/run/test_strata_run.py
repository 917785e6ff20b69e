"""``run.strata`` in a run, as a user types it: rows carry the column's value, the labelled
run's ``confidence`` block is stratified and leads (``headline``, console, report), each
value's block is the one a run of that value's samples alone gets, and data that cannot be
stratified is refused in one line before any work. ``harness label --by`` draws within each
value, and the filled sheet closes the loop."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.cli import harness_command as harness
from helpers.labelled_run import (
    judge_verdicts,
    label_rows,
    truth,
    write_dataset,
    write_judge,
    write_labels,
)

pytest.importorskip("ppi_py")

HUMAN = truth(120)


def kind(sample_id: str) -> str:
    """Every third sample is a "list" question, the others "fact" ones."""
    return "list" if int(sample_id[1:]) % 3 == 0 else "fact"


def stratified_data(folder: Path, ids: list[str] | None = None, column: str = "qtype") -> Path:
    """The labelled-run dataset with a ``column`` per record (only ``ids``, when given)."""
    path = write_dataset(folder, HUMAN)
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    kept = [dict(r, **{column: kind(r["id"])}) for r in records if ids is None or r["id"] in ids]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept), "utf-8")
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("strata")
    labelled = sorted(HUMAN)[::4]  # 30: 10 "list", 20 "fact"
    return {"data": stratified_data(folder),
            "judge": write_judge(folder, judge_verdicts(HUMAN, 0.35)),
            "labels": write_labels(folder, label_rows(HUMAN, labelled)), "folder": folder}


def judged(setup: dict[str, Path], *args: str, data: Path | None = None, cwd: Path):
    cwd.mkdir(parents=True, exist_ok=True)
    return run_cli("dataset=jsonl", f"dataset.path={data or setup['data']}",
                   "metric=llm_with_reference", "judge=fixture",
                   f"judge.labels={setup['judge']}", "tracking=none", "run.progress=false",
                   *args, cwd=cwd)


def test_the_block_is_stratified_and_leads(setup: dict[str, Path], tmp_path: Path) -> None:
    result = judged(setup, f"run.human_labels={setup['labels']}", "run.strata=qtype",
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = result.summary()
    block = summary["confidence"]
    assert block["interval_method"] == "stratified"
    assert summary["headline"]["value"] == block["mean"]
    assert summary["headline"]["interval"] == block["ci"]
    values = {e["value"]: e for e in block["strata"]["values"]}
    assert {v: (e["n"], e["n_labelled"]) for v, e in values.items()} == {
        "fact": (80, 20), "list": (40, 10)}
    w = 80 / 120
    assert block["mean"] == pytest.approx(w * values["fact"]["mean"]
                                          + (1 - w) * values["list"]["mean"], abs=1e-12)
    rows = result.rows()
    assert all(list(r)[:2] == ["id", "stratum"] and r["stratum"] == kind(r["id"]) for r in rows)
    out = result.stdout
    assert (f"mean {block['mean']:.3f} [{block['ci'][0]:.2f}, {block['ci'][1]:.2f}] (PPI++, "
            "stratified by qtype, 30 of 120 labelled") in out
    fact = values["fact"]
    assert (f"strata      qtype=fact: mean {fact['mean']:.3f} [{fact['ci'][0]:.2f}, "
            f"{fact['ci'][1]:.2f}] (PPI++, bootstrap, 20 of 80 labelled") in out
    html = (result.out_dir / "report.html").read_text("utf-8")
    assert html.count("data-stratum=") == 2 and "<h4>By qtype</h4>" in html

    # each value's block is the one a run of its samples alone gets
    alone_data = stratified_data(tmp_path, [k for k in HUMAN if kind(k) == "list"])
    alone = judged(setup, f"run.human_labels={setup['labels']}", data=alone_data,
                   cwd=tmp_path / "alone")
    assert alone.returncode == 0, alone.stderr
    single = alone.summary()["confidence"]
    assert (single["mean"], single["ci"]) == (values["list"]["mean"], values["list"]["ci"])


def test_without_labels_the_rows_carry_the_stratum(setup: dict[str, Path], tmp_path: Path):
    result = judged(setup, "run.strata=qtype", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {r["stratum"] for r in result.rows()} == {"fact", "list"}
    assert "confidence" not in result.summary()


@pytest.mark.parametrize(("args", "line"), [
    (("run.strata=qtyp",), "error: run.strata: the dataset {data} has no column 'qtyp' in its "
                           "first record (did you mean 'qtype'?); its columns are id, qtype, "
                           "reference, reference_context_ids, retrieved_context_ids, "
                           "retrieved_contexts, user_input"),
    (("run.strata=qtype", "run.shards=2"), "error: run.strata: shards do not carry the strata; "
                                           "set run.shards=1"),
])
def test_what_cannot_be_stratified_is_one_line_before_any_work(
        setup: dict[str, Path], tmp_path: Path, args: tuple[str, ...], line: str) -> None:
    result = judged(setup, f"run.human_labels={setup['labels']}", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == line.format(data=setup["data"])
    assert not any((result.out_dir / f).exists() for f in ("samples.jsonl", "summary.json",
                                                          "samples.jsonl.partial"))


def test_a_dataset_without_columns_is_refused(tmp_path: Path) -> None:
    result = run_cli("dataset=scifact_mini", "retriever=bm25", "metric=id_ranked",
                     "tracking=none", "run.strata=qtype", cwd=tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: run.strata: the dataset ") and (
        "has no columns to stratify by; strata need a dataset read from records") in line


@pytest.mark.parametrize(("value", "said"), [
    (None, "column 'qtype' (run.strata) is empty: every record needs its stratum"),
    ("drop", "column 'qtype' (run.strata) is missing: every record needs its stratum"),
    ("", "column 'qtype' (run.strata) is empty: every record needs its stratum"),
    (["a"], "column 'qtype' (run.strata) holds a list: a stratum is one text or number"),
])
def test_a_record_without_one_value_is_refused_at_its_line(
        setup: dict[str, Path], tmp_path: Path, value: object, said: str) -> None:
    records = [json.loads(x) for x in setup["data"].read_text("utf-8").splitlines()]
    records[6]["qtype"] = value
    if value == "drop":
        records[6]["qtyp"] = records[6].pop("qtype")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    result = judged(setup, "run.strata=qtype", data=data, cwd=tmp_path)
    assert result.returncode == 2
    hint = " (did you mean 'qtyp'?)" if value == "drop" else ""
    assert result.stderr.strip() == f"error: {data}:7: field 'qtype': {said}{hint}"


def test_numbers_and_booleans_are_strata_as_json_writes_them(tmp_path: Path) -> None:
    from harness import evaluate

    records = [{"id": f"s{i}", "retrieved_context_ids": ["a", "b"],
                "reference_context_ids": ["a"], "year": [2024, 2025, True, 1.5][i % 4]}
               for i in range(8)]
    result = evaluate(records, "id_ranked", overrides=["run.strata=year", "tracking=none"])
    assert [r["stratum"] for r in result.rows][:4] == ["2024", "2025", "true", "1.5"]


def test_a_csv_header_without_the_column_names_run_strata(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text('id,retrieved_context_ids,reference_context_ids,kind\n'
                    'q1,"[""a""]","[""a""]",x\n', "utf-8")
    result = run_cli("dataset=csv", f"dataset.path={data}", "metric=id_ranked",
                     "tracking=none", "run.strata=knd", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: run.strata: the dataset {data} has no column 'knd' in its first record "
        "(did you mean 'kind'?); its columns are id, kind, reference_context_ids, "
        "retrieved_context_ids")


def test_label_by_draws_within_each_value_and_the_filled_sheet_closes_the_loop(
        setup: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    first = judged(setup, "run.strata=qtype", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "sheet"
    code, stdout, err = harness(monkeypatch, capsys, "label", str(first.out_dir), "24",
                                "--by", "qtype", "--seed", "5", "--out", str(out))
    assert code == 0, err
    record = json.loads((out / "draw.json").read_text("utf-8"))
    assert record["by"] == "qtype"
    assert record["strata"] == {"fact": {"population": 80, "drawn": 16},
                                "list": {"population": 40, "drawn": 8}}
    assert stdout.startswith("drew 24 by qtype (fact 16 of 80, list 8 of 40) of 120 samples")
    drawn = record["drawn"]
    assert sum(kind(k) == "list" for k in drawn) == 8 and len(set(drawn)) == 24
    # seeded: the same command draws the same samples
    code, _, _ = harness(monkeypatch, capsys, "label", str(first.out_dir), "24", "--by",
                         "qtype", "--seed", "5", "--out", str(tmp_path / "again"))
    assert code == 0
    assert json.loads((tmp_path / "again" / "draw.json").read_text("utf-8"))["drawn"] == drawn

    with open(out / "labels.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["relevant"] = str(HUMAN[row["id"]][int(row["rank"]) - 1])
    filled = out / "filled.csv"
    with open(filled, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    rerun = judged(setup, f"run.human_labels={filled}", "run.strata=qtype",
                   cwd=tmp_path / "rerun")
    assert rerun.returncode == 0, rerun.stderr
    block = rerun.summary()["confidence"]
    assert block["random_draw"] is True and block["interval_method"] == "stratified"
    plain = judged(setup, f"run.human_labels={filled}", cwd=tmp_path / "plain")
    assert plain.summary()["confidence"]["note"] == (
        "the labels were drawn by qtype (harness label --by): set run.strata=qtype so that "
        "each value's samples count by their share of the run")


@pytest.mark.parametrize(("args", "said"), [
    (("24", "--by", "qtyp"), "error: label --by qtyp: the run in {run} was stratified by "
                             "'qtype' (did you mean 'qtype'?), so its rows carry no qtyp "
                             "value; score it again with run.strata=qtyp"),
    (("3", "--by", "qtype"), "error: label --by qtype: 3 samples cannot give each of the 2 "
                             "values of qtype the 2 labelled samples its interval needs; ask "
                             "for at least 4"),
    (("--width", "0.001", "--by", "qtype"), "error: label: ±0.001 at 95% by qtype: needs more "
                                            "labelled samples than the run's 120 scored "
                                            "samples; ask for a wider interval"),
    (("--width", "0.1", "--by", "qtyp"), "error: label --by qtyp: the run in {run} was "
                                         "stratified by 'qtype' (did you mean 'qtype'?)"),
])
def test_label_by_refusals(setup: dict[str, Path], tmp_path: Path, args: tuple[str, ...],
                           said: str, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    first = judged(setup, "run.strata=qtype", cwd=tmp_path)
    code, _, err = harness(monkeypatch, capsys, "label", str(first.out_dir), *args, "--out",
                           str(tmp_path / "sheet"))
    assert code == 2
    assert err.strip().startswith(said.format(run=first.out_dir))
    assert not (tmp_path / "sheet").exists()


def test_label_by_a_run_made_without_strata(setup: dict[str, Path], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    first = judged(setup, cwd=tmp_path)
    code, _, err = harness(monkeypatch, capsys, "label", str(first.out_dir), "10", "--by",
                           "qtype", "--out", str(tmp_path / "sheet"))
    assert code == 2
    assert err.strip() == (
        f"error: label --by qtype: the run in {first.out_dir} was made without run.strata, so "
        "its rows carry no qtype value; score it again with run.strata=qtype (the verdict "
        "cache answers the judge's part for free), then draw from that run")


@pytest.mark.slow
def test_compare_shows_each_run_s_own_interval(setup: dict[str, Path], tmp_path: Path) -> None:
    """Ranked by their headline (``ppi_mean``), a stratified run and a plain one of 30
    labels (the bootstrap) each show in compare the interval the run itself reported,
    not one recomputed another way from its rows."""
    from harness.compare import compare

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    summaries = []
    for name, extra in (("strat", ("run.strata=qtype",)), ("plain", ())):
        result = run_cli("dataset=jsonl", f"dataset.path={setup['data']}",
                         "metric=llm_with_reference", "judge=fixture",
                         f"judge.labels={setup['judge']}", "run.progress=false",
                         f"run.human_labels={setup['labels']}", "experiment_name=strata",
                         f"hydra.job.name={name}", *extra, cwd=tmp_path,
                         env={"MLFLOW_TRACKING_URI": store})
        assert result.returncode == 0, result.stderr
        summaries.append(result.summary()["confidence"])
    assert [s["interval_method"] for s in summaries] == ["stratified", "bootstrap"]
    ranked = compare("strata", tracking_uri=store, sweep="all", plots=False, log=False)
    assert ranked["metric"] == "ppi_mean"
    got = sorted((r["value"], r["ci"]) for r in ranked["rows"])
    assert got == sorted((s["mean"], s["ci"]) for s in summaries)


def test_many_values_print_twelve_lines_and_count_the_rest() -> None:
    from harness.confidence.ppi import confidence_block
    from harness.confidence.strata import stratify_block
    from harness.report.confidence_lines import strata_lines

    judge = {f"s{i:03d}": (i % 7) / 7 for i in range(300)}
    human = {k: v for k, v in list(judge.items())[::3]}
    strata = {k: f"v{int(k[1:]) % 20:02d}" for k in judge}
    block = stratify_block(confidence_block(judge, human), judge, human, strata, "lang", 0.95)
    lines = strata_lines(block)
    assert len(lines) == 13 and lines[0].startswith("lang=v00: mean ")
    assert lines[12] == ("... and 8 more values of lang (summary.json's confidence.strata has "
                         "them all)")
