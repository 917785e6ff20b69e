"""LangChain and LlamaIndex adapters (``retriever=langchain|llamaindex``; heavy but the first
two tests).

A user's package (written into a temporary folder) builds a real in-memory vector store
from the corpus the adapter hands it, with real embeddings (harness's bundled
all-MiniLM-L6-v2); the reference is harness's own exact cosine search (``retriever=dense``)
over the same embeddings.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest
from conftest import run_cli
from helpers.paths import ROOT, TEST_DATA, shared_data

from harness.core.errors import ConfigError
from harness.core.trust import trust_patterns, trusting
from harness.core.types import RagSample
from harness.datasets.beir.dataset import BeirDataset

TINY = TEST_DATA / "beir_tiny"
SCIFACT = shared_data("beir_scifact")
PKG = "adapters_userpkg"
#: The user's package: one encoder for both libraries, a factory per library, factories
#: that return the wrong thing, and a module that must never be imported.
FILES = {
    "__init__.py": "",
    "embed.py": """
        from harness.retrievers.dense.retriever import Dense

        _DENSE = []

        def encode(texts):
            if not _DENSE:
                _DENSE.append(Dense(cache=False))
            return _DENSE[0].encoder.encode(list(texts), 64)
    """,
    "lc.py": """
        from langchain_core.documents import Document
        from langchain_core.embeddings import Embeddings
        from langchain_core.retrievers import BaseRetriever
        from langchain_core.vectorstores import InMemoryVectorStore

        from .embed import encode

        class MiniLM(Embeddings):
            def embed_documents(self, texts):
                return encode(texts).tolist()

            def embed_query(self, text):
                return encode([text])[0].tolist()

        def make_store(documents):
            store = InMemoryVectorStore(MiniLM())
            store.add_documents(documents)
            return store

        def make_retriever(documents, k: int = 10):
            return make_store(documents).as_retriever(search_kwargs={"k": k})

        class Echo(BaseRetriever):  # answers with Documents that carry no id
            def _get_relevant_documents(self, query, *, run_manager):
                return [Document(page_content=query)]

        def make_echo():
            return Echo()
    """,
    "li.py": """
        from llama_index.core import VectorStoreIndex
        from llama_index.core.base.embeddings.base import BaseEmbedding

        from .embed import encode

        class MiniLM(BaseEmbedding):
            def _get_query_embedding(self, query):
                return encode([query])[0].tolist()

            async def _aget_query_embedding(self, query):
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text):
                return encode([text])[0].tolist()

            def _get_text_embeddings(self, texts):
                return encode(texts).tolist()

        def make_index(documents):
            return VectorStoreIndex(documents, embed_model=MiniLM(embed_batch_size=64))

        def make_retriever(documents, k: int = 10):
            return make_index(documents).as_retriever(similarity_top_k=k)
    """,
    "evil.py": "raise RuntimeError('imported')\n",
}


@pytest.mark.parametrize(("module", "cls", "extra", "lib"), [
    ("langchain", "LangChain", "langchain", "langchain_core"),
    ("llamaindex", "LlamaIndex", "llamaindex", "llama_index.core"),
])
def test_missing_library_is_one_line_naming_the_extra(module, cls, extra, lib, monkeypatch):
    import harness.retrievers.extras as extras

    adapter = getattr(__import__(f"harness.retrievers.adapters.{module}", fromlist=[cls]), cls)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util, "find_spec", lambda name, *a: None if name == lib else real(name, *a)
    )
    with pytest.raises(ConfigError, match=rf"^retriever={module} needs {lib}, which is not "
                       rf"installed: pip install -e '\.\[{extra}\]'$"), trusting(("mypkg.*",)):
        adapter(factory="mypkg.search.make")


@pytest.mark.slow
def test_importing_the_adapters_imports_neither_library():
    code = ("import sys, harness.retrievers.adapters.langchain, "
            "harness.retrievers.adapters.llamaindex; "
            "print(sorted(m for m in ('langchain_core', 'llama_index') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def user_pkg(tmp_path_factory):
    root = tmp_path_factory.mktemp("user")
    (root / PKG).mkdir()
    for name, text in FILES.items():
        (root / PKG / name).write_text(textwrap.dedent(text).lstrip(), "utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        yield root


def build(cls, factory, **settings):
    """The adapter, built as a run builds it: with the user's package trusted."""
    with trusting(trust_patterns([f"{PKG}.*"])):
        return cls(factory=f"{PKG}.{factory}", **settings)


def langchain(factory="lc.make_retriever", **settings):
    from harness.retrievers.adapters.langchain import LangChain

    return build(LangChain, factory, **settings)


def llamaindex(factory="li.make_retriever", **settings):
    from harness.retrievers.adapters.llamaindex import LlamaIndex

    return build(LlamaIndex, factory, **settings)


_EXACT: dict[tuple[str, tuple[str, ...], int], list[dict[str, float]]] = {}


def exact(corpus, queries, k):
    """harness's exact cosine search: each query's best k as {doc id: score}, in order."""
    from harness.retrievers.dense.retriever import Dense

    key = (corpus.key, tuple(queries), k)
    if key not in _EXACT:
        dense = Dense(cache=False)
        dense.prepare(corpus)
        chunks = dense.prepared_chunks()
        _EXACT[key] = [{chunks[i].doc_id: s for i, s in hits} for hits in dense.search(queries, k)]
    return _EXACT[key]


def assert_same_ranking(got, reference, k=5):
    """``got``'s first k ids rank as the reference's (an id may swap with one it ties)."""
    for ids, ref in zip(got, reference, strict=True):
        ref_ids, scores = list(ref), list(ref.values())
        assert len(ids) >= k
        for rank, doc_id in enumerate(ids[:k]):
            assert doc_id in ref, (doc_id, ref_ids)
            assert ref[doc_id] == pytest.approx(scores[rank], abs=1e-5), (ids[:k], ref_ids)


@pytest.fixture(scope="module")
def tiny():
    ds = BeirDataset(TINY)
    return ds.corpus(), [s.user_input for s in ds.samples()]


@pytest.fixture(scope="module")
def scifact():
    ds = BeirDataset(SCIFACT, limit=20, corpus_limit=60)
    return ds.corpus(), [s.user_input for s in ds.samples()]


@pytest.mark.heavy
@pytest.mark.shared_data("beir_scifact")
@pytest.mark.parametrize("make", [langchain, llamaindex])
def test_adapter_ranks_as_exact_dense_search(make, user_pkg, tiny, scifact):
    for corpus, queries in (tiny, scifact):
        adapter = make()
        adapter.prepare(corpus)
        hits = adapter.search(queries)
        assert_same_ranking([[h.id for h in q] for q in hits], exact(corpus, queries, 10))
        by_id = {d.id: d.content for d in corpus.documents}
        assert all(h.text == by_id[h.id] for q in hits for h in q)  # the whole title + text
    info = adapter.describe()
    assert info["kind"] in ("langchain", "llamaindex")
    assert info["index"]["source"] == "built" and info["index"]["seconds"] >= 0


@pytest.mark.heavy
def test_llamaindex_scores_order_and_concurrency(user_pkg, tiny):
    corpus, queries = tiny
    sequential, gathered = llamaindex(max_concurrency=1), llamaindex(max_concurrency=4)
    sequential.prepare(corpus)
    gathered.prepare(corpus)
    one, many = sequential.search(queries), gathered.search(queries)
    assert [[h.id for h in q] for q in one] == [[h.id for h in q] for q in many]
    reference = exact(corpus, queries, 8)
    for hits, ref in zip(many, reference, strict=True):
        assert [h.score for h in hits] == pytest.approx([ref[h.id] for h in hits], abs=1e-5)


@pytest.mark.heavy
def test_top_k_kwargs_and_samples(user_pkg, tiny):
    corpus, queries = tiny
    adapter = langchain(kwargs={"k": 3}, top_k=2)
    adapter.prepare(corpus)
    samples = [RagSample(id="a", user_input=queries[0]), RagSample(id="b")]
    first, second = adapter.retrieve_batch(samples)
    assert first.retrieved_context_ids == tuple(exact(corpus, queries[:1], 2)[0])
    assert second.retrieved_context_ids == ()  # no question: nothing retrieved
    assert adapter.describe()["kwargs"] == {"k": 3}


@pytest.mark.heavy
def test_wrong_factory_answers_get_one_line(user_pkg, tiny):
    corpus, queries = tiny
    store = langchain("lc.make_store")
    with pytest.raises(ConfigError, match=r"^retriever\.factory: adapters_userpkg\.lc\.make_store "
                       r"returned .*InMemoryVectorStore, expected a LangChain BaseRetriever.*"
                       r"return store\.as_retriever\(\)\)$"):
        store.prepare(corpus)
    index = llamaindex("li.make_index")
    with pytest.raises(ConfigError, match=r"returned .*VectorStoreIndex, expected a LlamaIndex "
                       r"BaseRetriever .*index\.as_retriever"):
        index.prepare(corpus)
    echo = langchain("lc.make_echo")
    echo.prepare(None)  # takes no documents: needs no corpus
    assert echo.needs_corpus is False
    with pytest.raises(ConfigError, match=r"^retriever\.id_key: a hit of query 0 has no "
                       r"metadata\['id'\] and no id"):
        echo.search(queries[:1])
    with pytest.raises(ConfigError, match=r"^retriever\.kwargs\.kk: unknown setting \(did you "
                       r"mean 'k'\?\)"):
        langchain(kwargs={"kk": 3})
    with pytest.raises(ConfigError, match=r"^retriever\.kwargs\.k: expected int, got 'x'"):
        langchain(kwargs={"k": "x"})
    needs = langchain()
    assert needs.needs_corpus is True  # documents has no default: the run checks first
    with pytest.raises(ConfigError, match=r"needs documents, but the dataset has no corpus"):
        needs.prepare(None)


@pytest.mark.heavy
def test_untrusted_factory_is_refused_before_import(user_pkg):
    from harness.retrievers.adapters.langchain import LangChain

    with pytest.raises(ConfigError, match=r"^retriever\.factory: 'adapters_userpkg\.evil\.make' "
                       r"is not trusted; .*nothing was imported$"):
        LangChain(factory=f"{PKG}.evil.make")
    assert f"{PKG}.evil" not in sys.modules
    result = run_cli(
        "retriever=llamaindex", f"retriever.factory={PKG}.evil.make", "tracking=none",
        cwd=user_pkg,
    )
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "is not trusted" in errors[0], result.stderr
    assert f"{PKG}.evil" not in sys.modules


#: A SciFact subset: 20 claims over their judged abstracts and the first 60 others.
SUBSET = ["dataset=scifact", "dataset.limit=20", "dataset.corpus_limit=60",
          "metric=id_ranked", "tracking=none", "run.report=false"]


@pytest.fixture(scope="module")
def dense_run(user_pkg):
    result = run_cli(*SUBSET, "retriever=dense", cwd=user_pkg)
    assert result.returncode == 0, result.stderr
    return result.summary()


@pytest.mark.heavy
@pytest.mark.shared_data("beir_scifact")
@pytest.mark.parametrize(("option", "factory"), [
    ("langchain", "lc.make_retriever"), ("llamaindex", "li.make_retriever")
])
def test_end_to_end_run_matches_dense(option, factory, user_pkg, dense_run):
    ours = run_cli(*SUBSET, f"retriever={option}", f"retriever.factory={PKG}.{factory}",
                   f"trusted_targets=[{PKG}.*]", cwd=user_pkg)
    assert ours.returncode == 0, ours.stderr
    got = ours.summary()
    assert got["n_scored"] == dense_run["n_scored"] == 20
    assert 0 < dense_run["mean"] < 1  # not a degenerate ranking
    assert got["mean"] == pytest.approx(dense_run["mean"], abs=1e-9)
    assert got["retriever"]["kind"] == option
    assert got["timing"]["index_build_s"] == got["retriever"]["index"]["seconds"] > 0
