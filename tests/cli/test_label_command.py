"""``harness label RUN_DIR N``: a seeded uniform draw of N samples from a
finished run, written as the labelling sheet that ``run.human_labels`` reads back; bad input
is one line and exit 2, Ctrl-C one line and 130. In process through ``harness``'s own entry
point, as a user types it; the ``slow`` ones as a process."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.cli import harness_command as harness
from scipy.stats import binom

from harness.confidence.labels import read_labels


def finished_run(folder: Path, *args: str) -> Path:
    """A real run of the bundled dataset (30 samples), its output folder."""
    result = run_cli("metric=id_based", "tracking=none", *args, cwd=folder)
    assert result.returncode == 0, result.stderr
    return result.out_dir


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_run(tmp_path_factory.mktemp("run"))


def run_rows(run: Path) -> dict[str, dict]:
    lines = (run / "samples.jsonl").read_text("utf-8").splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def drawn(out: Path) -> list[str]:
    return list(json.loads((out / "draw.json").read_text("utf-8"))["drawn"])


def test_the_sheet_is_written_and_the_next_command_named(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "sheet"
    code, stdout, err = harness(monkeypatch, capsys, "label", str(run_dir), "6", "--seed", "4",
                                "--out", str(out))
    assert (code, err) == (0, "")
    ids = drawn(out)
    rows = run_rows(run_dir)
    chunks = sum(len(rows[i]["chunks"]) for i in ids)
    lines = stdout.splitlines()
    assert lines[0] == f"drew 6 of 30 samples (seed 4): {chunks} chunks to label"
    assert lines[1:4] == [f"  sheet  {out / 'labels.csv'}",
                          f"         {out / 'labels.jsonl'} (the same rows, as JSON lines)",
                          f"  draw   {out / 'draw.json'}"]
    # the run's own overrides, then the sheet: the same run, scored with the labels
    assert lines[-1] == (f"  python -m harness metric=id_based tracking=none "
                         f"run.progress=false run.human_labels={out / 'labels.csv'}")
    record = json.loads((out / "draw.json").read_text("utf-8"))
    assert (record["seed"], record["n"], record["population"]) == (4, 6, 30)
    assert len(set(ids)) == 6 and set(ids) <= set(rows)


def test_the_sheet_holds_the_drawn_samples_chunks_and_reads_back_blank(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "sheet"
    assert harness(monkeypatch, capsys, "label", str(run_dir), "8", "--out", str(out))[0] == 0
    rows = run_rows(run_dir)
    ids = set(drawn(out))
    want = [(k, str(rank), c["id"], c["text"]) for k in rows if k in ids
            for rank, c in enumerate(rows[k]["chunks"], start=1)]
    with open(out / "labels.csv", encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    assert [(t["id"], t["rank"], t["context_id"], t["context"]) for t in table] == want
    assert {t["relevant"] for t in table} == {""}
    for name in ("labels.csv", "labels.jsonl"):
        back = read_labels(out / name)
        assert (back.labels, back.blank) == ((), len(want))
    # filled in, the CSV reads back as one label per row, tied to the run's chunks
    with open(out / "labels.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, list(table[0]))
        writer.writeheader()
        writer.writerows({**t, "relevant": n % 2} for n, t in enumerate(table))
    filled = read_labels(out / "labels.csv")
    assert filled.blank == 0
    assert [(x.sample_id, x.rank, x.context_id, x.relevant) for x in filled.labels] == [
        (k, int(r), c, n % 2) for n, (k, r, c, _) in enumerate(want)]


def test_same_seed_same_samples_another_seed_others(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        run_dir: Path, tmp_path: Path) -> None:
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2"), ("d", None)):
        extra = ("--seed", seed) if seed else ()
        code, _, err = harness(monkeypatch, capsys, "label", str(run_dir), "5", *extra,
                               "--out", str(tmp_path / name))
        assert code == 0, err
    assert drawn(tmp_path / "a") == drawn(tmp_path / "b") != drawn(tmp_path / "c")
    assert json.loads((tmp_path / "d" / "draw.json").read_text())["seed"] == 0


@pytest.mark.slow
def test_the_draw_is_uniform_over_the_runs_samples(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        run_dir: Path, tmp_path: Path) -> None:
    seeds, n = 300, 6
    counts: Counter[str] = Counter()
    for seed in range(seeds):
        out = tmp_path / str(seed)
        code, _, err = harness(monkeypatch, capsys, "label", str(run_dir), str(n),
                               "--seed", str(seed), "--out", str(out))
        assert code == 0, err
        counts.update(drawn(out))
    # each of the 30 samples is drawn with p = 6/30 per seed; bounds over all 30 at 0.1 %
    lo, hi = binom.ppf([0.0005, 0.9995], seeds, n / 30)
    assert set(counts) == set(run_rows(run_dir))
    assert all(lo <= c <= hi for c in counts.values()), counts


def test_the_default_folder_is_inside_the_run_and_a_sheet_is_never_overwritten(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    run = finished_run(tmp_path)
    assert harness(monkeypatch, capsys, "label", str(run), "3")[0] == 0
    sheet = run / "labels" / "labels.csv"
    sheet.write_text(sheet.read_text("utf-8-sig").replace(",\n", ",1\n"), encoding="utf-8")
    before = sheet.read_bytes()
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "3", "--seed", "9")
    assert (code, out) == (2, "")
    assert err == (f"error: label: {sheet} exists (a sheet may already be filled in); name "
                   "another folder, or move it away\n")
    assert sheet.read_bytes() == before


def test_cut_texts_are_said_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    run = finished_run(tmp_path, "run.row_text_chars=20")
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "4", "--out",
                             str(tmp_path / "s"))
    assert code == 0
    chunks = sum(len(run_rows(run)[i]["chunks"]) for i in drawn(tmp_path / "s"))
    assert err.splitlines() == [
        f"note: {chunks} of the {chunks} chunk texts are cut (they end in …: the run kept "
        "run.row_text_chars characters); rows still match by context_id and rank, but to read "
        "whole texts rerun with run.row_text_chars=null and draw again"]
    assert "run.row_text_chars=20 run.progress=false run.human_labels=" in out


@pytest.mark.parametrize(("args", "line"), [
    (("{tmp}/nope", "5"), "error: label: the run folder {tmp}/nope does not exist; name a "
                          "finished run's output folder (it holds samples.jsonl)"),
    (("{tmp}/empty", "5"), "error: {tmp}/empty/samples.jsonl: file not found; name the "
                           "folder of a finished run"),
    (("{run}", "1"), "error: harness label: argument N: expected at least 2 samples to draw "
                     "(an interval needs two labelled), got 1; see harness label --help"),
    (("{run}", "0"), "error: harness label: argument N: expected at least 2 samples"),
    (("{run}", "1.5"), "error: harness label: argument N: expected a whole number of samples "
                       "to draw, e.g. 150, got '1.5'; see harness label --help"),
    (("{run}", "ten"), "error: harness label: argument N: expected a whole number"),
    (("{run}", "31"), "error: label: 31 samples asked for, but the run has 30 samples with "
                      "retrieved chunks; ask for at most that many"),
    (("{run}",), "error: harness label: give N (how many samples to draw) or --width W (a "
                 "half-width), not neither; see harness label --help"),
    (("{run}", "5", "--width", "0.05"), "error: harness label: give N (how many samples to "
                                        "draw) or --width W (a half-width), not both"),
    (("{run}", "--width", "0"), "error: harness label: argument --width: expected a "
                                "half-width above 0 and below 1 (scores lie in [0, 1]), got 0"),
    (("{run}", "--width", "wide"), "error: harness label: argument --width: expected a "
                                   "half-width such as 0.03, got 'wide'"),
    (("{run}", "5", "--seed", "x"), "error: harness label: argument --seed: expected a whole "
                                    "number, got 'x'"),
    (("{run}", "5", "--out", "{tmp}/file"), "error: label: --out {tmp}/file is a file; name a "
                                            "folder for the sheet"),
    (("{run}/samples.jsonl", "5"), "error: label: the run folder {run}/samples.jsonl is a "
                                   "file; name a finished run's output folder"),
])
def test_bad_input_is_one_line_and_exit_2(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        run_dir: Path, tmp_path: Path, args: tuple[str, ...], line: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    fill = {"tmp": str(tmp_path), "run": str(run_dir)}
    code, out, err = harness(monkeypatch, capsys, "label", *(a.format(**fill) for a in args))
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and err.startswith(line.format(**fill)), err
    assert not (run_dir / "labels").exists() and not (tmp_path / "file").is_dir()


def test_help_lists_it_and_a_typo_names_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = harness(monkeypatch, capsys, "--help")
    assert code == 0
    assert ("  harness label    draw the samples to label from a finished run; write their "
            "sheet") in out.split("== Commands ==", 1)[1].splitlines()
    code, out, _ = harness(monkeypatch, capsys, "label", "--help")
    assert code == 0 and out.startswith("usage: harness label [-h] [--width W] [--by COLUMN] "
                                        "[--seed SEED] [--out OUT]\n")
    for typo in ("lable", "labels", "labl"):
        code, out, err = harness(monkeypatch, capsys, typo, "run", "5")
        assert (code, out) == (2, "")
        assert err.startswith(f"error: '{typo}' is not a command (did you mean 'harness "
                              "label'?)"), err


@pytest.mark.slow
def test_as_a_process_it_writes_the_sheet(run_dir: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "harness", "label", str(run_dir), "4",
                           "--seed", "2", "--out", "sheet"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("drew 4 of 30 samples (seed 2): ")
    assert len(drawn(tmp_path / "sheet")) == 4
    assert read_labels(tmp_path / "sheet" / "labels.jsonl").labels == ()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="watches /proc/PID/fd")
def test_ctrl_c_while_reading_a_large_run_is_one_line_and_130(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "samples.jsonl", "w", encoding="utf-8") as f:
        for i in range(400_000):
            f.write(f'{{"id": "q{i}", "chunks": [{{"id": "d{i}", "text": "t"}}]}}\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "label", str(run), "5", "--out", str(tmp_path / "s")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not any(os.path.realpath(fd.path).endswith("samples.jsonl")  # reading: handled
                  for fd in os.scandir(f"/proc/{proc.pid}/fd")):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (130, ""), err
    assert err == "interrupted (signal 2): harness label stopped; no sheet was written\n"
    assert not (tmp_path / "s").exists()
