"""retriever=chroma against a real Chroma server (``chroma run``) on 127.0.0.1.

The reference is the exact search: ``retriever=dense index=exact`` (numpy over every
chunk), with the same model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_DATA, run_cli, shared_data
from helpers import mlflow_runs
from helpers.chroma_server import ChromaServer, free_port
from helpers.errors import fails

from harness.core.errors import ConfigError
from harness.retrievers.chroma.client import endpoint

TINY = TEST_DATA / "beir_tiny"
SCIFACT = shared_data("beir_scifact")


def test_host_may_be_a_url_whose_credentials_are_never_shown() -> None:
    where = endpoint("https://reader:s3cret-pw@db.example:9000", 8000)
    assert (where.host, where.port, where.ssl) == ("db.example", 9000, True)
    assert where.url == "https://db.example:9000"
    assert where.headers["Authorization"] == "Basic cmVhZGVyOnMzY3JldC1wdw=="
    assert endpoint("db.example", 8001).url == "http://db.example:8001"
    with pytest.raises(ConfigError, match=r"^retriever\.host: .*retriever\.port") as e:
        endpoint("db.example:9000", 8000)
    with pytest.raises(ConfigError, match=r"^retriever\.port: expected a TCP port"):
        endpoint("127.0.0.1", 70000)
    with pytest.raises(ConfigError, match="no path") as e:
        endpoint("http://u:s3cret-pw@db/chroma", 8000)
    assert "s3cret-pw" not in str(e.value)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with ChromaServer(tmp_path_factory.mktemp("chroma") / "db") as running:
        yield running


def corpus(path: Path, limit: int | None = None) -> Any:
    from harness.core.types import Corpus
    from harness.datasets.beir.dataset import BeirDataset
    from harness.datasets.beir.files import documents_key

    full = BeirDataset(str(path)).corpus()
    assert full is not None
    if limit is None:
        return full
    docs = list(full.documents)[:limit]
    return Corpus(docs, documents_key(docs))


def queries(path: Path, limit: int | None = None) -> list[str]:
    from harness.datasets.beir.dataset import BeirDataset

    return [s.user_input or "" for s in BeirDataset(str(path)).samples(limit)]


def chroma(server: ChromaServer, **kw: Any) -> Any:
    from harness.retrievers.chroma.retriever import Chroma

    return Chroma(port=server.port, **kw)


def exact_ids(corpus_: Any, texts: list[str], k: int, **kw: Any) -> list[list[str]]:
    from harness.retrievers.dense.retriever import Dense

    dense = Dense(index="exact", top_k=k, **kw)
    dense.prepare(corpus_)
    return [[c.id for c in found] for found in dense.ranked(texts, k)]


def collection(server: ChromaServer, name: str) -> Any:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.HttpClient(host="127.0.0.1", port=server.port,
                                 settings=Settings(anonymized_telemetry=False))
    return client.get_collection(name, embedding_function=None)


@pytest.mark.heavy
def test_tiny_set_ranks_as_the_exact_search(server: ChromaServer) -> None:
    texts = queries(TINY)
    retriever = chroma(server, top_k=8)
    retriever.prepare(corpus(TINY))
    got = [[c.id for c in found] for found in retriever.ranked(texts, 8)]
    assert got == exact_ids(corpus(TINY), texts, 8)
    assert got[texts.index("Famous tower in Paris")][0] == "<dbpedia:Eiffel_Tower>#0"
    described = retriever.describe()
    assert described["metrics"] == {"ann_recall": 1.0}
    assert described["server"] == f"http://127.0.0.1:{server.port}"
    index = described["index"]
    assert index["source"] == "built" and index["chunks"] == 8
    assert index["build_seconds"] >= index["upload_seconds"] > 0
    assert described["collection"].startswith("harness-")
    assert collection(server, described["collection"]).count() == 8
    # the protocol's entry point: document ids, best first
    from harness.core.types import RagSample

    [sample] = retriever.retrieve_batch([RagSample(id="q4", user_input="Famous tower in Paris")])
    assert sample.retrieved_context_ids[:1] == ("<dbpedia:Eiffel_Tower>",)


@pytest.mark.heavy
def test_a_second_prepare_reuses_the_collection(server: ChromaServer) -> None:
    first = chroma(server, top_k=3, chunk_size=5)
    first.prepare(corpus(TINY))
    name, index = first.describe()["collection"], first.describe()["index"]
    n = index["chunks"]
    assert index["source"] == "built" and n > 8  # chunks of 5 words
    again = chroma(server, top_k=5, chunk_size=5)  # top_k reads the index: same collection
    again.prepare(corpus(TINY))
    assert again.describe()["collection"] == name
    assert again.describe()["index"]["source"] == "reused"
    assert again.describe()["index"]["upload_seconds"] == index["upload_seconds"]
    assert collection(server, name).count() == n
    other = chroma(server, top_k=3, chunk_size=5, ef_search=20)  # a collection of its own
    other.prepare(corpus(TINY))
    assert other.describe()["collection"] != name
    assert other.describe()["index"]["source"] == "built"
    # an incomplete collection (an interrupted upload) is filled again
    collection(server, name).delete(ids=["d1#0"])
    assert collection(server, name).count() == n - 1
    third = chroma(server, top_k=3, chunk_size=5)
    third.prepare(corpus(TINY))
    assert third.describe()["index"]["source"] == "built"
    assert collection(server, name).count() == n


@pytest.mark.heavy
def test_a_named_collection_holding_another_index_is_refused(server: ChromaServer) -> None:
    chroma(server, collection="mine", chunk_size=5).prepare(corpus(TINY))
    with pytest.raises(ConfigError, match=r"^retriever\.collection: collection 'mine' .* "
                                          r"holds another index"):
        chroma(server, collection="mine", chunk_size=6).prepare(corpus(TINY))
    with pytest.raises(ConfigError, match=r"^retriever\.collection: expected 3-512"):
        chroma(server, collection="x")


@pytest.mark.heavy
@pytest.mark.shared_data("beir_scifact")
def test_ann_recall_is_the_recall_of_the_exact_search_and_grows_with_ef_search(
    server: ChromaServer,
) -> None:
    # 60 SciFact abstracts in chunks of 10 words: about 1,300 vectors, enough for a
    # sparse HNSW graph to miss neighbours
    docs, texts = corpus(SCIFACT, 60), queries(SCIFACT, 30)
    exact = exact_ids(docs, texts, 10, chunk_size=10)
    recalls = []
    for ef_search in (1, 200):
        retriever = chroma(server, top_k=10, chunk_size=10, hnsw_m=4, ef_construction=16,
                           ef_search=ef_search)
        retriever.prepare(docs)
        got = [[c.id for c in found] for found in retriever.ranked(texts, 10)]
        recall = sum(len(set(g) & set(e)) for g, e in zip(got, exact, strict=True)) / 300
        assert retriever.describe()["metrics"]["ann_recall"] == pytest.approx(recall, abs=1e-6)
        recalls.append(recall)
    low, high = recalls
    # a sparse graph with a short candidate list misses many (0.56 when written); a long
    # list finds nearly all (0.98): each ef_search has an index of its own that uses it
    assert low < 0.75 and high > 0.9


@pytest.mark.heavy
def test_no_server_is_one_line_saying_how_to_start_one(tmp_path: Path) -> None:
    port = free_port()
    result = run_cli("dataset=beir", f"dataset.path={TINY}", "retriever=chroma",
                     f"retriever.port={port}", "metric=id_ranked", "tracking=none",
                     cwd=tmp_path)
    fails(result, "retriever.host/retriever.port", f"127.0.0.1:{port}",
          f"chroma run --path DIR --host 127.0.0.1 --port {port}")


@pytest.mark.heavy
def test_cli_sweep_over_hnsw_m_lands_two_child_runs(
    server: ChromaServer, tmp_path: Path, mlflow_store: str
) -> None:
    result = run_cli("-m", "dataset=beir", f"dataset.path={TINY}", "retriever=chroma",
                     f"retriever.port={server.port}", "metric=id_ranked",
                     "retriever.hnsw_m=8,16", "experiment_name=chroma_sweep",
                     f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": mlflow_store}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = mlflow_runs.runs(mlflow_store, "chroma_sweep")
    [parent] = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 2
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}
    assert {c.data.params["retriever.hnsw_m"] for c in children} == {"8", "16"}
    assert all(c.info.status == "FINISHED" for c in children)
    # 8 documents: HNSW finds the exact ranking whatever M, so the scores are the exact
    # search's
    exact = run_cli("dataset=beir", f"dataset.path={TINY}", "retriever=dense",
                    "retriever.index=exact", "metric=id_ranked", "tracking=none", cwd=tmp_path)
    assert exact.returncode == 0, exact.stderr[-3000:]
    reference = exact.summary()
    assert 0 < reference["mean"] <= 1
    for child in children:
        metrics = child.data.metrics
        assert metrics["retriever/ann_recall"] == 1.0
        assert metrics["mean"] == pytest.approx(reference["mean"], abs=1e-12)
