"""``harness label`` on a run that cut its chunk texts (``run.row_text_chars``): the sheet
gets them whole from the corpus of the run's dataset, as a run with
``run.row_text_chars=null`` shows them; without a readable corpus they stay cut and one
``note:`` line says so; a run folder's config never imports code."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import TEST_DATA, run_cli
from helpers.cli import harness_command as harness

from harness.confidence.labels import read_labels


def bm25_run(cwd: Path, data: Path, chars: str) -> Path:
    """A run of BM25 over a copy of the tiny BEIR set, texts kept to ``chars``."""
    result = run_cli("dataset=beir", f"dataset.path={data}", "retriever=bm25",
                     "retriever.top_k=3", "metric=id_ranked", "tracking=none",
                     f"run.row_text_chars={chars}", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.out_dir


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_cut_texts_come_back_whole_from_the_corpus(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    data = tmp_path / "beir"
    shutil.copytree(TEST_DATA / "beir_tiny", data)
    cut, whole = bm25_run(tmp_path, data, "12"), bm25_run(tmp_path, data, "null")
    assert any(c["text"].endswith("…") for r in jsonl(cut / "samples.jsonl") for c in r["chunks"])
    code, out, err = harness(monkeypatch, capsys, "label", str(cut), "4", "--out",
                             str(tmp_path / "s"))
    assert (code, err) == (0, "")
    sheet = jsonl(tmp_path / "s" / "labels.jsonl")
    truth = {r["id"]: r["chunks"] for r in jsonl(whole / "samples.jsonl")}
    assert [(x["context_id"], x["context"], x["text_cut"]) for x in sheet] == [
        (c["id"], c["text"], 0) for k in dict.fromkeys(x["id"] for x in sheet)
        for c in truth[k]]
    record = json.loads((tmp_path / "s" / "draw.json").read_text("utf-8"))
    assert (record["texts_cut"], record["texts_from_corpus"]) == (0, len(sheet))
    assert f"  texts  {len(sheet)} chunk texts the run had cut, taken whole" in out
    for name in ("labels.csv", "labels.jsonl"):
        assert read_labels(tmp_path / "s" / name).blank == len(sheet)
    # the corpus moved away since the run: the texts stay cut, and one line says so
    shutil.rmtree(data)
    code, out, err = harness(monkeypatch, capsys, "label", str(cut), "4", "--out",
                             str(tmp_path / "t"))
    assert code == 0 and "  texts  " not in out
    assert err.startswith(f"note: {len(sheet)} of the {len(sheet)} chunk texts are cut")
    assert jsonl(tmp_path / "t" / "labels.jsonl")[0]["text_cut"] == 1


def test_a_run_folders_config_never_imports_code(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"id": f"q{i}", "chunks": [{"id": "d1", "text": "abc…"}]} for i in range(3)]
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "config.yaml").write_text("trusted_targets: [evil.*]\n"
                                     "dataset:\n  _target_: evil.Corpus\n")
    (tmp_path / "evil.py").write_text("open('imported', 'w').close()\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = harness(monkeypatch, capsys, "label", str(run), "2", "--out", "s")
    assert code == 0
    assert err.startswith("note: 2 of the 2 chunk texts are cut")
    assert not (tmp_path / "imported").exists() and "evil" not in sys.modules
