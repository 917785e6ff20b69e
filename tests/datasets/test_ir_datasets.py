"""dataset=ir_datasets: a collection of the ir_datasets package read into the samples
dataset=beir makes. The default lane registers a tiny collection made from files in tmp_path
(nothing is downloaded); the shared_data lane places BEIR SciFact in ir_datasets' home folder
as its own download would, and checks it against dataset=beir on the same files."""

import dataclasses
import json
import os
import socket
import sys
import tempfile
import uuid
import zipfile
from pathlib import Path

# ir_datasets makes its home folder (and one folder per collection in it) when imported:
# a folder of this session's, never the user's ~/.ir_datasets
os.environ["IR_DATASETS_HOME"] = tempfile.mkdtemp(prefix="harness-tests-irds-")

import ir_datasets  # noqa: E402
import pytest  # noqa: E402
from conftest import run_cli, run_cli_subprocess, shared_data  # noqa: E402
from ir_datasets.datasets.base import Dataset  # noqa: E402
from ir_datasets.datasets.beir import BeirTitleDoc  # noqa: E402
from ir_datasets.formats import GenericQuery, TrecQrels, TsvDocs, TsvQueries  # noqa: E402
from ir_datasets.util import Download, LocalDownload, RequestsDownload  # noqa: E402

from harness.core.errors import ConfigError, DatasetError  # noqa: E402
from harness.core.types import Document  # noqa: E402
from harness.datasets.beir.dataset import BeirDataset  # noqa: E402
from harness.datasets.ir_datasets import MISSING_PACKAGE, IrDatasetsDataset  # noqa: E402

DOCS = [("d1", "Glucose is made in the chloroplast from light.", "Photosynthesis"),
        ("d2", "Plants need water.", "Water"),
        ("d3", "The mitochondria produces ATP for the cell.", "Mitochondria"),
        ("d4", "Paris is the capital of France.", "Paris"),
        ("d5", "Cells divide by mitosis.", "")]
QUERIES = [("q1", "How do plants make glucose?"), ("q2", "What produces ATP in a cell?"),
           ("q3", "Which city is the capital of France?"), ("q4", "Unjudged question")]
QRELS = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 1), ("q2", "d5", 1), ("q3", "d4", 1)]


def closed_port() -> int:
    """A local port nothing listens on: a download from it fails at once, offline."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def register(tmp_path: Path, *, queries_from: object = None, qrels: bool = True,
             qrels_lines: list[str] | None = None) -> str:
    """Register the tiny collection under a fresh id; its files live in tmp_path."""
    (tmp_path / "docs.tsv").write_text("".join(f"{d}\t{t}\t{h}\n" for d, t, h in DOCS))
    (tmp_path / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES))
    lines = qrels_lines or [f"{q} 0 {d} {g}\n" for q, d, g in QRELS]
    (tmp_path / "qrels.txt").write_text("".join(lines))
    parts: list[object] = [
        TsvDocs(LocalDownload(tmp_path / "docs.tsv"), doc_cls=BeirTitleDoc),
        TsvQueries(queries_from or LocalDownload(tmp_path / "queries.tsv"),
                   query_cls=GenericQuery),
    ]
    if qrels:
        parts.append(TrecQrels(LocalDownload(tmp_path / "qrels.txt"), {}))
    name = f"harness-tests/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(name, Dataset(*parts))
    return name


def beir_folder(tmp_path: Path) -> Path:
    """The same collection as a BEIR folder."""
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": d, "title": h, "text": t}) + "\n" for d, t, h in DOCS))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in QRELS))
    return folder


def test_samples_as_written_and_as_dataset_beir_makes_them(tmp_path: Path) -> None:
    ds = IrDatasetsDataset(register(tmp_path))
    ds.check()
    samples = list(ds.samples())
    assert [s.id for s in samples] == ["q1", "q2", "q3"]  # q4 has no judgments
    q1 = samples[0]
    assert q1.user_input == "How do plants make glucose?"
    assert q1.reference_context_ids == ("d1", "d2")
    assert q1.reference_context_grades == (2.0, 0.0)
    assert q1.reference_contexts == (
        "Photosynthesis\n\nGlucose is made in the chloroplast from light.",)
    assert samples[1].reference_contexts[1] == "Cells divide by mitosis."  # no title
    assert ds.corpus().documents[4] == Document("d5", "", "Cells divide by mitosis.")
    beir = BeirDataset(beir_folder(tmp_path))
    assert samples == list(beir.samples())
    assert ds.corpus().documents == beir.corpus().documents
    assert list(IrDatasetsDataset(ds.name, min_grade=2).samples())[1].reference_contexts == ()


def test_limits_describe_and_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    name = register(tmp_path)
    ds = IrDatasetsDataset(name, limit=2, corpus_limit=1)
    assert ds.estimate_count() == 2
    assert [d.id for d in ds.corpus().documents] == ["d1", "d2", "d3", "d5"]  # + judged
    described = ds.describe()
    assert described["path"] == f"ir_datasets:{name}" and described["name"] == name
    assert described["ir_datasets_home"] == str(tmp_path / "home")
    assert described["ir_datasets"] == ir_datasets.__version__
    assert described["queries"] == 2 and described["qrels"] == 4 and described["documents"] == 4
    assert described["corpus_lines"] == 5 and "split" not in described
    same = IrDatasetsDataset(name, limit=2, corpus_limit=1)
    assert ds.sha256() == same.sha256() != IrDatasetsDataset(name).sha256()


@pytest.mark.slow
def test_cli_scores_as_dataset_beir(tmp_path: Path) -> None:
    common = ("retriever=bm25", "metric=id_ranked", "tracking=none")
    ir = run_cli("dataset=ir_datasets", f"dataset.name={register(tmp_path)}", *common,
                 cwd=tmp_path)
    assert ir.returncode == 0, ir.stderr
    beir = run_cli("dataset=beir", f"dataset.path={beir_folder(tmp_path)}", *common,
                   cwd=tmp_path)
    assert beir.returncode == 0, beir.stderr
    assert ir.summary()["n_scored"] == 3
    assert ir.summary()["mean"] == beir.summary()["mean"]
    assert ir.summary()["retrieval"] == beir.summary()["retrieval"]
    assert [r["id"] for r in ir.rows()] == [r["id"] for r in beir.rows()]


def one_error_line(result: object) -> str:
    assert result.returncode == 2, result.stderr  # type: ignore[attr-defined]
    lines = result.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return str(lines[0])


def test_missing_package_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # `import ir_datasets` fails
    result = run_cli("dataset=ir_datasets", "dataset.name=beir/scifact/test", "retriever=bm25",
                     "tracking=none", cwd=tmp_path)
    assert one_error_line(result) == f"error: {MISSING_PACKAGE}"
    assert MISSING_PACKAGE == ("dataset=ir_datasets needs the ir-datasets package: "
                               "pip install 'harness-context-precision[ir]'")


def test_unknown_id_suggests_the_nearest(tmp_path: Path) -> None:
    result = run_cli("dataset=ir_datasets", "dataset.name=beir/scifac/test", "retriever=bm25",
                     "tracking=none", cwd=tmp_path)
    line = one_error_line(result)
    assert "dataset.name" in line and "did you mean 'beir/scifact/test'" in line


def test_id_without_qrels_names_what_it_lacks(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no qrels; name a collection with both"):
        IrDatasetsDataset(register(tmp_path, qrels=False)).check()
    with pytest.raises(ConfigError, match=r"beir/scifact/test"):  # a parent: its subsets
        IrDatasetsDataset("beir/scifact").check()


def test_failed_fetch_is_one_line_naming_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "irds_home"
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    url = f"http://127.0.0.1:{closed_port()}/queries.tsv"
    name = register(tmp_path, queries_from=Download([RequestsDownload(url, tries=1)]))
    result = run_cli("dataset=ir_datasets", f"dataset.name={name}", "retriever=bm25",
                     "tracking=none", cwd=tmp_path)
    line = one_error_line(result)
    assert f"ir_datasets:{name}: ir_datasets could not fetch its queries" in line
    assert f"ir_datasets keeps its files in {home}" in line and "Traceback" not in result.stderr


def test_malformed_qrels_are_a_reading_error(tmp_path: Path) -> None:
    name = register(tmp_path, qrels_lines=["q1 0 d1\n"])
    with pytest.raises(DatasetError, match=r"could not read its qrels \(RuntimeError: expected 4"):
        IrDatasetsDataset(name).check()


def test_bad_name_setting() -> None:
    for bad in ("", "  ", 3):
        with pytest.raises(ConfigError, match="dataset.name: expected an ir_datasets id"):
            IrDatasetsDataset(bad)  # type: ignore[arg-type]


def scifact_home(tmp_path: Path) -> Path:
    """An ir_datasets home holding beir/scifact as its own download leaves it: the BEIR zip
    (scifact/corpus.jsonl, queries.jsonl, qrels/*.tsv) at beir/scifact/source.zip."""
    home, source = tmp_path / "irds_home", shared_data("beir_scifact")
    (home / "beir" / "scifact").mkdir(parents=True)
    with zipfile.ZipFile(home / "beir" / "scifact" / "source.zip", "w") as z:
        for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/train.tsv"):
            z.write(source / name, f"scifact/{name}")
    return home


DUMP = """import dataclasses, json, sys
from harness.datasets.ir_datasets import IrDatasetsDataset
ds = IrDatasetsDataset("beir/scifact/test")
json.dump({"samples": [dataclasses.asdict(s) for s in ds.samples()],
           "documents": [dataclasses.astuple(d) for d in ds.corpus().documents]}, sys.stdout)
"""


@pytest.mark.slow
@pytest.mark.shared_data("beir_scifact")
def test_beir_scifact_from_the_home_folder_equals_dataset_beir(tmp_path: Path) -> None:
    """ir_datasets fixes its home when imported: the runs that read it are child processes,
    with any download pointed at a closed local port (none can happen unseen)."""
    import subprocess

    proxy = f"http://127.0.0.1:{closed_port()}"
    env = {"IR_DATASETS_HOME": str(scifact_home(tmp_path)), "HTTPS_PROXY": proxy,
           "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy}
    proc = subprocess.run([sys.executable, "-c", DUMP], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    beir = BeirDataset(shared_data("beir_scifact"))
    assert got["samples"] == [json.loads(json.dumps(dataclasses.asdict(s)))
                              for s in beir.samples()]
    assert got["documents"] == [list(dataclasses.astuple(d)) for d in beir.corpus().documents]
    assert len(got["samples"]) == 300 and len(got["documents"]) == 5183
    common = ("retriever=bm25", "metric=id_ranked", "tracking=none")
    ir = run_cli_subprocess("dataset=ir_datasets", "dataset.name=beir/scifact/test", *common,
                            cwd=tmp_path, env=env, timeout=300)
    assert ir.returncode == 0, ir.stderr
    ref = run_cli("dataset=beir", f"dataset.path={shared_data('beir_scifact')}", *common,
                  cwd=tmp_path)
    assert ir.summary()["mean"] == ref.summary()["mean"]
    assert ir.summary()["retrieval"] == ref.summary()["retrieval"]
