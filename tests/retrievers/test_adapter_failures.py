"""The LangChain and LlamaIndex adapters behind the boundary of users' code (issue 24,
classes 3 and 4): a library retriever that raises is one line naming the factory and its
error (a ``ConnectionError`` is no fault of the rows file), and a Document whose id holds a
lone surrogate is refused at its query and hit. Heavy: needs langchain-core / llama-index."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli
from helpers.paths import TEST_DATA
from helpers.user_code import user_package

from harness.core.errors import ComponentFailed
from harness.core.trust import trust_patterns, trusting
from harness.core.types import RagSample

heavy = pytest.mark.heavy
TINY = TEST_DATA / "beir_tiny"
LC = """
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Gone(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            raise ValueError("the vector store went away")

    class BadId(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return [Document(page_content="Paris", metadata={"id": "d\\ud800"})]

    def gone():
        return Gone()

    def bad_id():
        return BadId()
"""
LI = """
    from llama_index.core.retrievers import BaseRetriever

    class Refused(BaseRetriever):
        def _retrieve(self, query_bundle):
            raise ConnectionError("connection refused by 127.0.0.1:9")

    def refused():
        return Refused()
"""


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = user_package(tmp_path, monkeypatch, "adapters_fail", lc=LC, li=LI)
    return name


ASKED = [RagSample(id="a", user_input="Where is the tower?")]


@heavy
def test_a_langchain_retriever_that_raises_is_one_line(pkg: str) -> None:
    pytest.importorskip("langchain_core")
    from harness.retrievers.adapters.langchain import LangChain

    with trusting(trust_patterns([f"{pkg}.*"])):
        retriever = LangChain(factory=f"{pkg}.lc.gone")
    retriever.prepare(None)
    with pytest.raises(ComponentFailed) as e:
        retriever.retrieve_batch(ASKED)
    assert str(e.value) == (f"retriever langchain factory {pkg}.lc.gone: search() raised "
                            "ValueError: the vector store went away")


@heavy
def test_a_langchain_document_id_with_a_lone_surrogate_is_refused(pkg: str) -> None:
    pytest.importorskip("langchain_core")
    from harness.retrievers.adapters.langchain import LangChain

    with trusting(trust_patterns([f"{pkg}.*"])):
        retriever = LangChain(factory=f"{pkg}.lc.bad_id")
    retriever.prepare(None)
    with pytest.raises(ComponentFailed, match=r"id at query 0, hit 0 that contains a lone "
                                              r"surrogate \(\\ud800\)"):
        retriever.retrieve_batch(ASKED)


@heavy
def test_a_llamaindex_connection_error_blames_the_retriever(pkg: str, tmp_path: Path) -> None:
    pytest.importorskip("llama_index.core")
    result = run_cli("retriever=llamaindex", f"retriever.factory={pkg}.li.refused",
                     f"trusted_targets=[{pkg}.*]", "dataset=beir", f"dataset.path={TINY}",
                     "metric=id_ranked", "tracking=none", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith(f"error: retriever llamaindex factory {pkg}.li.refused: search() "
                           "raised ConnectionError: connection refused by 127.0.0.1:9")
    # the blame is the retriever's; the rows file is named only as where rows are kept
    blame, kept = line.split("; ", 1)
    assert "samples.jsonl" not in blame
    assert kept.startswith("0 rows scored before it are kept in ") and kept.endswith(
        "samples.jsonl.partial")
