"""``harness label RUN_DIR --width W``: as many labelled samples as give the interval a
half-width of W, worked out from the run's judge scores (and its labels so far), said in one
line and drawn; a labelled run's samples come along, filled in. In the slow lane, the whole
loop: a pilot of 30, its rerun, ``--width 0.03``, the labelled rerun within 0.0345."""

from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from helpers.cli import harness_command as harness
from helpers.labelled_run import judge_verdicts, truth, write_dataset, write_judge
from helpers.ppi_sim import ap, population

pytest.importorskip("ppi_py")
Z = 1.959963984540054


def write_run(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return folder


def judged_rows(n: int, labelled: int = 0, seed: int = 0) -> list[dict]:
    """A finished run's rows: n samples of 5 chunks scored by a lenient judge, the first
    ``labelled`` with human verdicts and score."""
    human, judged = population(np.random.default_rng(seed), n, "lenient")
    rows = []
    for i in range(n):
        row = {"id": f"q{i:04d}", "question": f"q {i}?", "score": float(ap(judged[i:i + 1])[0]),
               "chunks": [{"id": f"d{i}-{r}", "text": f"text {i} {r}"} for r in range(5)]}
        if i < labelled:
            row["human_verdicts"] = human[i].astype(int).tolist()
            row["human_score"] = float(ap(human[i:i + 1])[0])
        rows.append(row)
    return rows


def test_without_labels_it_draws_the_labels_alone_number_and_says_so(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    rows = judged_rows(300)
    run = write_run(tmp_path / "run", rows)
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "--width", "0.08",
                             "--out", str(tmp_path / "s"))
    assert (code, err) == (0, "")
    sd = statistics.stdev(r["score"] for r in rows)
    n = math.ceil(Z * Z * sd * sd / 0.08 ** 2)
    lines = out.splitlines()
    assert lines[0] == (f"±0.08 at 95%: {n} labelled samples, assuming the human scores spread "
                        f"as the judge's (sd {sd:.2f}) and the judge does not help: no labels "
                        "yet, so this is the labels-alone number. A pilot tells better: label "
                        "30 (harness label RUN_DIR 30), rerun with them, then ask for the "
                        "width again")
    assert lines[1] == f"drew {n} of 300 samples (seed 0): {5 * n} chunks to label"
    record = json.loads((tmp_path / "s" / "draw.json").read_text("utf-8"))
    assert record["n"] == len(record["drawn"]) == n and "carried" not in record


def test_with_labels_so_far_it_plans_from_them_and_carries_them_filled_in(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    rows = judged_rows(2000, labelled=40)
    run = write_run(tmp_path / "run", rows)
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "--width", "0.04",
                             "--seed", "3", "--out", str(tmp_path / "s"))
    assert (code, err) == (0, "")
    first = out.splitlines()[0]
    needed, alone = (int(x.replace(",", "")) for x in (
        first.split(": ", 1)[1].split(" ")[0], first.split("the labels alone: ")[1].split(")")[0]))
    assert first.startswith(f"±0.04 at 95%: {needed:,} labelled samples (the labels alone: ")
    assert "planned from the 40 labelled so far (human sd " in first
    assert needed < alone
    record = json.loads((tmp_path / "s" / "draw.json").read_text("utf-8"))
    carried = [r["id"] for r in rows[:40]]
    assert record["carried"] == carried and record["drawn"][:40] == carried
    assert record["n"] == len(record["drawn"]) == needed and len(set(record["drawn"])) == needed
    assert out.splitlines()[1] == (f"drew {needed - 40} more of 1960 unlabelled samples (seed "
                                   f"3): {5 * needed} chunks to label, the 40 labelled so far "
                                   "in the sheet too, filled in")
    with open(tmp_path / "s" / "labels.csv", encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    given = {(t["id"], int(t["rank"])): t["relevant"] for t in table}
    for row in rows[:40]:
        assert [given[(row["id"], r + 1)] for r in range(5)] == [
            str(v) for v in row["human_verdicts"]]
    assert {v for (k, _), v in given.items() if k not in carried} == {""}


def test_labels_so_far_that_reach_the_width_draw_nothing(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", judged_rows(400, labelled=300))
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "--width", "0.2",
                             "--out", str(tmp_path / "s"))
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == ("the 300 labelled so far give about ±0.2 already: nothing "
                                    "to draw")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(("rows", "width", "line"), [
    (judged_rows(30), "0.01", "error: label: ±0.01 at 95%: needs more labelled samples than "
                              "the run's 30 scored samples; ask for a wider interval, or score "
                              "more samples"),
    ([{"id": "a", "score": 0.5, "chunks": [{"id": "d"}]}], "0.1",
     "error: label: the run has 1 scored sample(s): too few to tell how many labels give ±0.1; "
     "draw a number of samples instead (harness label RUN_DIR N)"),
    ([{"id": str(i), "score": 1.0, "chunks": [{"id": "d"}]} for i in range(9)], "0.1",
     "error: label: the judge gave every sample the same score, so its spread cannot stand in "
     "for the labels'; draw a pilot (harness label RUN_DIR 30), label it, rerun with it and ask "
     "for ±0.1 again"),
])
def test_a_width_it_cannot_plan_is_one_line_and_nothing_drawn(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        rows: list[dict], width: str, line: str) -> None:
    run = write_run(tmp_path / "run", rows)
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "--width", width,
                             "--out", str(tmp_path / "s"))
    assert (code, out, err) == (2, "", line + "\n")
    assert not (tmp_path / "s").exists()


def _fill(sheet: Path, human: dict[str, list[int]], out: Path) -> Path:
    """The sheet filled in by a labeller who knows the truth."""
    with open(sheet, encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    with open(out, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, list(table[0]))
        writer.writeheader()
        for t in table:
            writer.writerow({**t, "relevant": human[t["id"]][int(t["rank"]) - 1]})
    return out


@pytest.mark.slow  # three judged runs of 2,000 samples
def test_a_pilot_then_width_003_meets_it_with_fewer_labels_than_the_labels_alone(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    """The loop a user runs: a judged run of 2,000 samples (a lenient judge), a pilot of 30
    labelled, its rerun, ``--width 0.03`` from it (fewer than the labels alone would need),
    the sheet filled in, and the labelled rerun's half-width at most 0.0345."""
    human = truth(2000, seed=5)
    judge = judge_verdicts(human, 0.3, seed=6)
    data, judge_file = write_dataset(tmp_path, human), write_judge(tmp_path, judge)
    args = ("dataset=jsonl", f"dataset.path={data}", "metric=llm_with_reference",
            "judge=fixture", f"judge.labels={judge_file}", "tracking=none", "run.report=false")
    first = run_cli(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    code, _, err = harness(monkeypatch, capsys, "label", str(first.out_dir), "30", "--out",
                           str(tmp_path / "pilot"))
    assert code == 0, err
    pilot = _fill(tmp_path / "pilot" / "labels.csv", human, tmp_path / "pilot" / "filled.csv")
    piloted = run_cli(*args, f"run.human_labels={pilot}", cwd=tmp_path)
    assert piloted.returncode == 0, piloted.stderr
    code, out, err = harness(monkeypatch, capsys, "label", str(piloted.out_dir), "--width",
                             "0.03", "--out", str(tmp_path / "more"))
    assert code == 0, err
    first_line = out.splitlines()[0]
    needed = int(first_line.split(": ", 1)[1].split(" ")[0].replace(",", ""))
    alone = int(first_line.split("the labels alone: ")[1].split(")")[0].replace(",", ""))
    assert needed < alone, first_line
    filled = _fill(tmp_path / "more" / "labels.csv", human, tmp_path / "more" / "filled.csv")
    final = run_cli(*args, f"run.human_labels={filled}", cwd=tmp_path)
    assert final.returncode == 0, final.stderr
    block = final.summary()["confidence"]
    assert block["n_labelled"] == needed and block["random_draw"] is True
    assert (block["ci"][1] - block["ci"][0]) / 2 <= 0.0345, (block["ci"], first_line)


def test_too_few_labels_so_far_are_carried_and_said(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    rows = judged_rows(300, labelled=4)
    run = write_run(tmp_path / "run", rows)
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "--width", "0.1",
                             "--out", str(tmp_path / "s"))
    assert (code, err) == (0, "")
    sd = statistics.stdev(r["score"] for r in rows)
    n = math.ceil(Z * Z * sd * sd / 0.1 ** 2)
    assert out.splitlines()[0].startswith(
        f"±0.1 at 95%: {n} labelled samples, assuming the human scores spread as the judge's "
        f"(sd {sd:.2f}) and the judge does not help: 4 labelled so far, too few to measure "
        "that (10 needed), so this is the labels-alone number.")
    record = json.loads((tmp_path / "s" / "draw.json").read_text("utf-8"))
    assert record["carried"] == [r["id"] for r in rows[:4]] and record["n"] == n


def by_rows(sizes: dict[str, int], labelled: int = 0, seed: int = 0) -> list[dict]:
    """``judged_rows`` with a stratum per row: each value's samples judged by its own
    judge (``lenient`` for the first, ``strict`` after), the first ``labelled`` of each
    with human verdicts."""
    rng = np.random.default_rng(seed)
    rows = []
    for (value, size), kind in zip(sizes.items(), ("lenient", "strict", "useless"), strict=False):
        human, judged = population(rng, size, kind)
        for i in range(size):
            row = {"id": f"{value}{i:04d}", "stratum": value,
                   "score": float(ap(judged[i:i + 1])[0]),
                   "chunks": [{"id": f"d{value}{i}-{r}", "text": "t"} for r in range(5)]}
            if i < labelled:
                row["human_verdicts"] = human[i].astype(int).tolist()
                row["human_score"] = float(ap(human[i:i + 1])[0])
            rows.append(row)
    return rows


def write_strata_run(folder: Path, rows: list[dict], column: str = "qtype") -> Path:
    write_run(folder, rows)
    (folder / "config.yaml").write_text(f"run:\n  strata: {column}\n", "utf-8")
    return folder


def test_width_by_value_draws_cochran_s_number_shared_in_proportion(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    rows = by_rows({"long": 600, "short": 300})
    run = write_strata_run(tmp_path / "run", rows)
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "--width", "0.05",
                             "--by", "qtype", "--out", str(tmp_path / "s"))
    assert (code, err) == (0, "")
    values = {v: [r["score"] for r in rows if r["stratum"] == v] for v in ("long", "short")}
    want = Z * Z * sum(len(s) / 900 * statistics.variance(s) for s in values.values()) / 0.05**2
    pooled = math.ceil(Z * Z * statistics.variance(r["score"] for r in rows) / 0.05 ** 2)
    first, second = out.splitlines()[:2]
    needed = int(first.split(": ", 1)[1].split(" ")[0])
    assert abs(needed - math.ceil(want)) <= 1
    record = json.loads((tmp_path / "s" / "draw.json").read_text("utf-8"))
    drawn = {v: c["drawn"] for v, c in record["strata"].items()}
    assert sum(drawn.values()) == needed == len(record["drawn"]) and record["by"] == "qtype"
    assert abs(drawn["long"] - 2 * drawn["short"]) <= 2
    assert first == (
        f"±0.05 at 95% by qtype: {needed} labelled samples ({pooled} unstratified): long "
        f"{drawn['long']} of 600, short {drawn['short']} of 300; 2 of the 2 values have fewer "
        "than 10 labels so far: for them the human scores are assumed to spread as the "
        "judge's and the judge not to help (a pilot by value tells better: harness label "
        "RUN_DIR 30 --by qtype)")
    assert second.startswith(f"drew {needed} by qtype (long {drawn['long']} of 600, short "
                             f"{drawn['short']} of 300) of 900 samples (seed 0)")
    by_id = {r["id"]: r["stratum"] for r in rows}
    assert sum(by_id[k] == "short" for k in record["drawn"]) == drawn["short"]


def test_width_by_value_plans_from_each_value_s_labels_and_carries_them(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    rows = by_rows({"long": 1500, "short": 500}, labelled=20, seed=3)
    run = write_strata_run(tmp_path / "run", rows)
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "--width", "0.04",
                             "--by", "qtype", "--out", str(tmp_path / "s"))
    assert (code, err) == (0, "")
    first = out.splitlines()[0]
    assert first.endswith("planned from each value's labels so far (their spread taken at "
                          "its 90 % upper bound)")
    record = json.loads((tmp_path / "s" / "draw.json").read_text("utf-8"))
    carried = [r["id"] for r in rows if "human_verdicts" in r]
    assert len(carried) == 40 and record["carried"] == carried
    needed = int(first.split(": ", 1)[1].split(" ")[0].replace(",", ""))
    assert len(record["drawn"]) == len(set(record["drawn"])) == needed
    drawn = {v: c["drawn"] for v, c in record["strata"].items()}
    assert sum(drawn.values()) == needed - 40
    assert out.splitlines()[1].startswith(
        f"drew {needed - 40} more by qtype (long {drawn['long']} of 1480, short "
        f"{drawn['short']} of 480) of 1960 unlabelled samples (seed 0)")


@pytest.mark.parametrize(("config", "line"), [
    ("run:\n  strata: null\n", "error: label --by qtype: the run in {run} was made without "
                                "run.strata, so its rows carry no qtype value"),
    ("run:\n  strata: lang\n", "error: label --by qtype: the run in {run} was stratified by "
                                "'lang', so its rows carry no qtype value"),
])
def test_width_by_a_column_the_run_did_not_stratify_by(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        config: str, line: str) -> None:
    run = write_strata_run(tmp_path / "run", by_rows({"a": 30, "b": 30}))
    (run / "config.yaml").write_text(config, "utf-8")
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "--width", "0.1", "--by",
                             "qtype", "--out", str(tmp_path / "s"))
    assert (code, out) == (2, "") and err.startswith(line.format(run=run))
    assert not (tmp_path / "s").exists()


@pytest.mark.slow  # four judged runs of 2,000 samples
def test_a_pilot_by_value_then_width_by_value_meets_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    """The loop by query type: a judged run of 2,000 samples whose two types the judge
    errs on differently (calls 50 % and 10 % of the irrelevant chunks relevant), a pilot of
    30 drawn by type, its rerun, ``--width 0.04 --by qtype`` from it, the sheet filled in,
    and the stratified rerun's half-width at most 0.046 (1.15 times)."""
    human = truth(2000, seed=8)
    qtype = {k: "docs" if i % 3 == 0 else "web" for i, k in enumerate(human)}
    judge = {**judge_verdicts({k: v for k, v in human.items() if qtype[k] == "web"}, 0.5, 9),
             **judge_verdicts({k: v for k, v in human.items() if qtype[k] == "docs"}, 0.1, 10)}
    data, judge_file = write_dataset(tmp_path, human), write_judge(tmp_path, judge)
    records = [json.loads(x) for x in data.read_text("utf-8").splitlines()]
    data.write_text("".join(json.dumps({**r, "qtype": qtype[r["id"]]}) + "\n" for r in records),
                    "utf-8")
    args = ("dataset=jsonl", f"dataset.path={data}", "metric=llm_with_reference",
            "judge=fixture", f"judge.labels={judge_file}", "tracking=none", "run.report=false",
            "run.strata=qtype")
    first = run_cli(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    code, _, err = harness(monkeypatch, capsys, "label", str(first.out_dir), "30", "--by",
                           "qtype", "--out", str(tmp_path / "pilot"))
    assert code == 0, err
    pilot = _fill(tmp_path / "pilot" / "labels.csv", human, tmp_path / "pilot" / "filled.csv")
    piloted = run_cli(*args, f"run.human_labels={pilot}", cwd=tmp_path)
    assert piloted.returncode == 0, piloted.stderr
    block = piloted.summary()["confidence"]
    assert block["interval_method"] == "stratified" and block["n_labelled"] == 30
    assert isinstance(block["labels_to_halve_width"], int)
    more = block["labels_to_halve_width"]
    half = (block["ci"][1] - block["ci"][0]) / 4
    assert (f"{more:,} more labelled samples would halve the width (to ±{half:.3f}): harness "
            f"label RUN_DIR --width {half:.3g} --by qtype") in piloted.stdout
    code, out, err = harness(monkeypatch, capsys, "label", str(piloted.out_dir), "--width",
                             "0.04", "--by", "qtype", "--out", str(tmp_path / "more"))
    assert code == 0, err
    first_line = out.splitlines()[0]
    needed = int(first_line.split(": ", 1)[1].split(" ")[0].replace(",", ""))
    filled = _fill(tmp_path / "more" / "labels.csv", human, tmp_path / "more" / "filled.csv")
    final = run_cli(*args, f"run.human_labels={filled}", cwd=tmp_path)
    assert final.returncode == 0, final.stderr
    block = final.summary()["confidence"]
    assert block["interval_method"] == "stratified" and block["random_draw"] is True
    assert block["n_labelled"] == needed
    assert (block["ci"][1] - block["ci"][0]) / 2 <= 0.046, (block["ci"], first_line)
