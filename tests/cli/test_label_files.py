"""Where ``harness label`` writes, and what it never touches: no write through a symbolic
link (one that points nowhere included), no file replaced, the three files whole or none of
them, and processes writing into one folder at once leave one whole sheet, the others
refused in one line, none removing a file it did not make."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.cli import harness_command as harness

from harness.confidence.sheet import FILES, draw_sheet, write_sheet
from harness.core.errors import ConfigError, Interrupted

NAMES = list(FILES.values())


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = run_cli("metric=id_based", "tracking=none", cwd=tmp_path_factory.mktemp("run"))
    assert result.returncode == 0, result.stderr
    return result.out_dir


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("target", ["nowhere", "a file"])
def test_a_symbolic_link_in_the_sheets_place_is_refused_and_nothing_written_through_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], run_dir: Path,
        tmp_path: Path, name: str, target: str) -> None:
    out, elsewhere = tmp_path / "sheet", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    victim = elsewhere / "victim.csv"
    if target == "a file":
        victim.write_text("keep me\n")
    (out / name).symlink_to(victim)
    code, stdout, err = harness(monkeypatch, capsys, "label", str(run_dir), "10", "--out",
                                str(out))
    assert (code, stdout) == (2, "")
    assert err == (f"error: label: {out / name} is a symbolic link (a sheet is never written "
                   "through one); name another folder, or move it away\n")
    assert listing(out) == [name] and (out / name).is_symlink()
    assert listing(elsewhere) == ([] if target == "nowhere" else ["victim.csv"])
    if target == "a file":
        assert victim.read_text() == "keep me\n"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["link to nowhere", "file", "folder"])
def test_a_name_taken_after_the_first_check_is_refused_when_writing(
        run_dir: Path, tmp_path: Path, name: str, kind: str) -> None:
    """Between the early check and the write (another process, a user): the write itself
    refuses, leaves what took the name as it is, and leaves no file of its own."""
    out = tmp_path / "sheet"
    out.mkdir()
    sheet = draw_sheet(run_dir, 5, 1)
    place = out / name
    if kind == "link to nowhere":
        place.symlink_to(tmp_path / "gone" / name)
    elif kind == "file":
        place.write_text("someone else's\n")
    else:
        place.mkdir()
    with pytest.raises(ConfigError, match=f"label: {place} (is a symbolic link|exists)"):
        write_sheet(out, sheet)
    assert listing(out) == [name]
    if kind == "file":
        assert place.read_text() == "someone else's\n"
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize("stop_after", [0, 1, 2])
def test_ctrl_c_mid_write_leaves_no_half_sheet(
        monkeypatch: pytest.MonkeyPatch, run_dir: Path, tmp_path: Path,
        stop_after: int) -> None:
    """Ctrl-C lands right after the first, second or third file got its name (before the
    writer could note it): every file the writer made is gone, the folder it made too,
    and the files of another sheet beside it are kept."""
    out = tmp_path / "new" / "sheet"
    sheet = draw_sheet(run_dir, 4, 2)
    real_link, linked = os.link, []

    def link(*args: object, **kwargs: object) -> None:
        real_link(*args, **kwargs)  # type: ignore[arg-type]
        linked.append(args[1])
        if len(linked) > stop_after:
            raise Interrupted(signal.SIGINT)

    monkeypatch.setattr(os, "link", link)
    with pytest.raises(Interrupted):
        write_sheet(out, sheet)
    assert len(linked) == stop_after + 1
    assert not (tmp_path / "new").exists()  # the folders it made, emptied and removed
    # into a folder that holds other things: they stay, only ours go
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    linked.clear()
    with pytest.raises(Interrupted):
        write_sheet(kept, sheet)
    assert listing(kept) == ["notes.txt"]


def test_a_folder_that_is_a_link_to_nowhere_is_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], run_dir: Path,
        tmp_path: Path) -> None:
    (tmp_path / "out").symlink_to(tmp_path / "missing")
    code, stdout, err = harness(monkeypatch, capsys, "label", str(run_dir), "3", "--out",
                                str(tmp_path / "out"))
    assert (code, stdout) == (2, "")
    assert err == (f"error: label: --out {tmp_path / 'out'} is a symbolic link that points "
                   "nowhere; name a folder for the sheet\n")
    assert not (tmp_path / "missing").exists()


def test_a_folder_named_through_a_link_to_a_folder_is_written(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], run_dir: Path,
        tmp_path: Path) -> None:
    """The folder the user names may be a link to a folder (a data disk): the files are
    written in it, as files of their own."""
    (tmp_path / "disk").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "disk")
    code, _, err = harness(monkeypatch, capsys, "label", str(run_dir), "3", "--out",
                           str(tmp_path / "out"))
    assert (code, err) == (0, "")
    assert listing(tmp_path / "disk") == sorted(NAMES)
    assert not any((tmp_path / "disk" / n).is_symlink() for n in NAMES)


@pytest.mark.slow
def test_six_processes_into_one_folder_leave_one_whole_sheet(tmp_path: Path) -> None:
    """Six ``harness label`` processes with different seeds, started together, three
    rounds: one writes the sheet, five exit 2 with one line naming labels.csv, and the
    sheet left is the winner's, whole (its three files agree). The run is large enough
    (40,000 rows) that all six are past the early check before the first one writes."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with open(run_dir / "samples.jsonl", "w", encoding="utf-8") as f:
        for i in range(40_000):
            f.write(json.dumps({"id": f"q{i}", "question": f"=Q{i}", "chunks": [
                {"id": f"d{i}-{r}", "text": f"text {i} {r}"} for r in range(3)]}) + "\n")
    for round_ in range(3):
        out = tmp_path / f"sheet{round_}"
        procs = [subprocess.Popen(
            [sys.executable, "-m", "harness", "label", str(run_dir), "8", "--seed", str(seed),
             "--out", str(out)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True) for seed in range(6)]
        done = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read())  # type: ignore[union-attr]
                for p in procs]
        for p in procs:
            p.stdout.close()  # type: ignore[union-attr]
            p.stderr.close()  # type: ignore[union-attr]
        winners = [seed for seed, (code, _, _) in enumerate(done) if code == 0]
        assert len(winners) == 1, done
        for seed, (code, stdout, err) in enumerate(done):
            if seed in winners:
                continue
            assert (code, stdout) == (2, ""), done
            assert err == (f"error: label: {out / 'labels.csv'} exists (a sheet may already "
                           "be filled in); name another folder, or move it away\n"), err
        assert listing(out) == sorted(NAMES)  # no temporary file left either
        record = json.loads((out / "draw.json").read_text("utf-8"))
        assert record["seed"] == winners[0]
        jsonl = [json.loads(x) for x in (out / "labels.jsonl").read_text("utf-8").splitlines()]
        assert set(record["drawn"]) == {x["id"] for x in jsonl}
        csv_ids = {line.split(",", 1)[0] for line in
                   (out / "labels.csv").read_text("utf-8-sig").splitlines()[1:]}
        assert csv_ids == set(record["drawn"])
        assert len(jsonl) == record["chunks"]
