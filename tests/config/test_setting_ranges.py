"""Issue 12, class 3: every number, enum and list setting is checked, with its range, before
any work: ``error: <group>.<key>: expected <what, with its range>, got <value>``, exit 2.

The ranges are declared once, on the constructors' annotations (``harness.core.validation.Range``),
and read by ``check_arguments``; a float is finite unless its annotation says otherwise."""

from __future__ import annotations

import math
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from conftest import run_cli
from helpers.errors import fails

from harness.core.errors import ConfigError
from harness.core.settings import RunSettings
from harness.core.validation import AllowNonFinite, Range, check_arguments, check_value, describe
from harness.metrics.id_based import IdContextPrecision
from harness.metrics.non_llm import StringContextPrecision
from harness.retrievers.bm25 import BM25
from harness.retrievers.dense.retriever import Dense
from harness.retrievers.hybrid import Hybrid
from harness.retrievers.precomputed import Precomputed

#: Two BM25 parts, so that a hybrid needs no torch.
TWO_BM25 = ("retriever=hybrid", "retriever@retriever.retrievers.dense=bm25")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # the cases
        (["metric=id_ranked", "metric.eps=inf"], "metric.eps: expected finite float >= 0, got inf"),
        (["metric=id_ranked", "metric.eps=nan"], "metric.eps: expected finite float >= 0, got nan"),
        (["metric.eps=-inf"], "metric.eps: expected finite float >= 0, got -inf"),
        (["metric.eps=-0.5"], "metric.eps: expected finite float >= 0, got -0.5"),
        (["run.retrieval_ks=[a]"], "run.retrieval_ks: expected list of int, got ['a']"),
        (["run.retrieval_ks=[0,-5]"], "run.retrieval_ks: expected list of int >= 1, got [0, -5]"),
        (["run.retrieval_ks=[10,1.5]"], "run.retrieval_ks: expected list of int, got [10, 1.5]"),
        (["run.retrieval_ks=10"], "run.retrieval_ks: expected list of int, got 10"),
        # the id metrics
        (["metric.min_grade=nan"], "metric.min_grade: expected finite float, got nan"),
        (["metric=id_ranked", "metric.min_grade=inf"],
         "metric.min_grade: expected finite float, got inf"),
        (["metric.aggregate=best"],
         "metric.aggregate: expected 'set_precision' or 'average_precision', got 'best'"),
        (["metric.aggregate=set_precison"], "(did you mean 'set_precision'?)"),
        # the string metric
        (["metric=non_llm", "metric.eps=inf"], "metric.eps: expected finite float >= 0, got inf"),
        (["metric=non_llm", "metric.threshold=1.5"],
         "metric.threshold: expected finite float in [0, 1], got 1.5"),
        (["metric=non_llm", "metric.threshold=nan"],
         "metric.threshold: expected finite float in [0, 1], got nan"),
        (["metric=non_llm", "metric.threshold=-inf"], "metric.threshold: expected finite float"),
        (["metric=non_llm", "metric.workers=0"], "metric.workers: expected -1 or int >= 1, got 0"),
        (["metric=non_llm", "metric.workers=-2"],
         "metric.workers: expected -1 or int >= 1, got -2"),
        (["metric=non_llm", "metric.workers=2.5"], "metric.workers: expected -1 or int, got 2.5"),
        (["metric=non_llm", "metric.workers=true"], "metric.workers: expected -1 or int, got True"),
        (["metric=non_llm", "metric.measure=cosine"], "metric.measure: expected 'levenshtein' or"),
        # the run block
        (["run.limit=-1"], "run.limit: expected int >= 0 or null, got -1"),
        (["run.limit=2.5"], "run.limit: expected int or null, got 2.5"),
        (["run.batch_size=0"], "run.batch_size: expected int >= 1 or null, got 0"),
        (["run.batch_size=true"], "run.batch_size: expected int or null, got True"),
        (["run.max_unscored_frac=1.5"],
         "run.max_unscored_frac: expected finite float in [0, 1] or null, got 1.5"),
        (["run.max_unscored_frac=nan"], "run.max_unscored_frac: expected finite float in [0, 1]"),
        (["run.max_unscored_frac=-0.1"], "run.max_unscored_frac: expected finite float in [0, 1]"),
        (["run.retrieval_min_grade=inf"],
         "run.retrieval_min_grade: expected finite float or null, got inf"),
        (["run.retrieval_min_grade=nan"], "run.retrieval_min_grade: expected finite float"),
        (["run.seed=1.5"], "run.seed: expected int, got 1.5"),
        (["run.quiet=maybe"], "run.quiet: expected bool, got 'maybe'"),
        (["run.objective=[1]"], "run.objective: expected str or list of str, got [1]"),
        # precomputed retrieval
        (["retriever.top_k=0"], "retriever.top_k: expected int >= 1 or null, got 0"),
        (["retriever.top_k=-3"], "retriever.top_k: expected int >= 1 or null, got -3"),
        (["retriever.top_k=2.5"], "retriever.top_k: expected int or null, got 2.5"),
        # bm25
        (["retriever=bm25", "retriever.k1=inf"],
         "retriever.k1: expected finite float >= 0, got inf"),
        (["retriever=bm25", "retriever.k1=-1"], "retriever.k1: expected finite float >= 0, got -1"),
        (["retriever=bm25", "retriever.b=1.5"],
         "retriever.b: expected finite float in [0, 1], got 1.5"),
        (["retriever=bm25", "retriever.b=nan"], "retriever.b: expected finite float in [0, 1]"),
        (["retriever=bm25", "retriever.delta=-0.5"], "retriever.delta: expected finite float >= 0"),
        (["retriever=bm25", "retriever.delta=inf"], "retriever.delta: expected finite float >= 0"),
        (["retriever=bm25", "retriever.top_k=0"], "retriever.top_k: expected int >= 1, got 0"),
        (["retriever=bm25", "retriever.candidates=0"],
         "retriever.candidates: expected int >= 1, got 0"),
        (["retriever=bm25", "retriever.chunk_size=0"],
         "retriever.chunk_size: expected int >= 1 or null, got 0"),
        (["retriever=bm25", "retriever.chunk_size=50", "retriever.chunk_overlap=-1"],
         "retriever.chunk_overlap: expected int >= 0, got -1"),
        (["retriever=bm25", "retriever.chunk_size=50", "retriever.chunk_overlap=50"],
         "retriever.chunk_overlap: must be smaller than chunk_size (50), got 50"),
        (["retriever=bm25", "retriever.method=bm26"], "retriever.method: expected 'robertson' or"),
        (["retriever=bm25", "retriever.stopwords=[1,2]"],
         "retriever.stopwords: expected str or list of str or null, got [1, 2]"),
        # hybrid (of two bm25 parts) and its parts
        ([*TWO_BM25, "retriever.rrf_k=inf"],
         "retriever.rrf_k: expected finite float >= 0, got inf"),
        ([*TWO_BM25, "retriever.rrf_k=-1"], "retriever.rrf_k: expected finite float >= 0, got -1"),
        ([*TWO_BM25, "retriever.weights=[1,nan]"],
         "retriever.weights: expected list of finite float >= 0 or null, got [1, nan]"),
        ([*TWO_BM25, "retriever.weights=[1,-2]"], "retriever.weights: expected list of finite"),
        ([*TWO_BM25, "retriever.weights=[1,x]"],
         "retriever.weights: expected list of float or null, got [1, 'x']"),
        ([*TWO_BM25, "retriever.weights=[1]"], "retriever.weights: expected 2 numbers >= 0"),
        ([*TWO_BM25, "retriever.candidates=0"], "retriever.candidates: expected int >= 1, got 0"),
        ([*TWO_BM25, "retriever.level=page"], "retriever.level: expected 'chunk' or 'document'"),
        ([*TWO_BM25, "retriever.retrievers.dense.b=2"],
         "retriever.retrievers.dense.b: expected finite float in [0, 1], got 2"),
        ([*TWO_BM25, "retriever.retrievers.bm25.k1=nan"],
         "retriever.retrievers.bm25.k1: expected finite float >= 0, got nan"),
        # dense: checked before torch is needed
        (["retriever=dense", "retriever.batch_size=0"],
         "retriever.batch_size: expected int >= 1, got 0"),
        (["retriever=dense", "retriever.top_k=0"], "retriever.top_k: expected int >= 1, got 0"),
        (["retriever=dense", "retriever.device=1"], "retriever.device: expected str, got 1"),
        (["retriever=dense", "retriever.chunk_size=-4"], "retriever.chunk_size: expected int >= 1"),
        # the rerank stage is named where it sits
        (["retriever=bm25", "rerank=dense", "retriever.rerank.batch_size=0"],
         "retriever.rerank.batch_size: expected int >= 1, got 0"),
    ],
)
def test_a_bad_setting_is_named_with_its_range(
    tmp_path: Path, args: list[str], message: str
) -> None:
    fails(run_cli(*args, "tracking=none", cwd=tmp_path), message)


@pytest.mark.parametrize(
    "args",
    [
        ["metric=id_ranked", "metric.eps=0"],
        ["metric=id_ranked", "metric.eps=1e-10", "metric.min_grade=-1.5"],
        ["metric=non_llm", "metric.threshold=0", "metric.workers=1"],
        ["metric=non_llm", "metric.threshold=1", "metric.workers=-1", "metric.eps=0"],
        ["run.max_unscored_frac=1", "run.retrieval_ks=[1,3]", "run.retrieval_min_grade=2"],
        ["run.max_unscored_frac=0.0", "run.retrieval_ks=[]", "run.batch_size=1", "run.seed=-7"],
        ["retriever.top_k=1", "run.limit=3"],
    ],
)
def test_settings_on_the_edge_of_their_range_run(tmp_path: Path, args: list[str]) -> None:
    result = run_cli(*args, "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert all(r["score"] is None or math.isfinite(r["score"]) for r in result.rows())


def test_eps_is_in_the_score(tmp_path: Path) -> None:
    """docs/reference/metrics.md: AP = sum(precision@k * v_k) / (relevant retrieved + eps). With one
    relevant chunk at rank 1, a finite eps gives 1 / (1 + eps)."""
    rows = tmp_path / "d.jsonl"
    rows.write_text(
        '{"id": "a", "retrieved_context_ids": ["x", "y"], "reference_context_ids": ["x"]}\n',
        "utf-8",
    )
    result = run_cli("metric=id_ranked", "metric.eps=1", "dataset=jsonl", f"dataset.path={rows}",
                     "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.rows()[0]["score"] == pytest.approx(1 / (1 + 1))


# -- the vocabulary ------------------------------------------------------------------------


def test_range_words() -> None:
    assert str(Range(ge=0)) == ">= 0"
    assert str(Range(gt=0)) == "> 0"
    assert str(Range(ge=0, le=1)) == "in [0, 1]"
    assert str(Range(ge=0, lt=1)) == "in [0, 1)"
    assert str(Range(gt=0.5, le=2)) == "in (0.5, 2]"
    assert str(Range(le=-1)) == "<= -1"
    assert 0 in Range(ge=0) and 1 in Range(ge=0, le=1) and 1 not in Range(ge=0, lt=1)
    assert math.nan not in Range(ge=0) and True not in Range(ge=0) and "1" not in Range(ge=0)


@pytest.mark.parametrize(
    ("annotation", "value", "message"),
    [
        (float, math.inf, "expected finite float, got inf"),
        (float, "1", "expected float, got '1'"),
        (float | None, math.nan, "expected finite float or null, got nan"),
        (Annotated[float, Range(gt=0)], 0.0, "expected finite float > 0, got 0.0"),
        (Annotated[int, Range(ge=1)], True, "expected int, got True"),
        (Annotated[int, Range(ge=1)] | None, 0, "expected int >= 1 or null, got 0"),
        (list[int], [1, "2"], "expected list of int, got [1, '2']"),
        (list[int], (1, 2), "expected list of int, got (1, 2)"),
        (list[Annotated[float, Range(ge=0)]], [0.5, math.inf],
         "expected list of finite float >= 0, got [0.5, inf]"),
        (Literal["a", "bb"], "bbb", "expected 'a' or 'bb', got 'bbb' (did you mean 'bb'?)"),
        (Literal[-1] | Annotated[int, Range(ge=1)], True, "expected -1 or int, got True"),
        (Literal[1], 1.0, "expected 1, got 1.0"),
    ],
)
def test_check_value_messages(annotation: Any, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        check_value("g.k", annotation, value)
    assert str(e.value) == f"g.k: {message}"


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        (Annotated[float, AllowNonFinite()], math.inf),
        (Annotated[float, AllowNonFinite()] | None, math.nan),
        (float, 10**400),  # an int too large for a float is still a finite number
        (Annotated[int, Range(ge=1)], 10**400),
        (Annotated[float, Range(ge=0, le=1)], 1),
        (Literal[-1] | Annotated[int, Range(ge=1)], -1),
        (list[Annotated[int, Range(ge=1)]], []),
        (Any, math.nan),
    ],
)
def test_check_value_accepts(annotation: Any, value: Any) -> None:
    check_value("g.k", annotation, value)


def test_describe_without_ranges_is_the_type_alone() -> None:
    assert describe(Annotated[int, Range(ge=0)] | None, ranges=False) == "int or null"
    assert describe(Annotated[float, Range(ge=0)]) == "finite float >= 0"
    assert describe(Annotated[float, AllowNonFinite(), Range(ge=0)]) == "float >= 0"


def test_check_arguments_reads_ranges_from_a_constructor() -> None:
    class Part:
        def __init__(self, n: Annotated[int, Range(ge=2)] = 2, x: float = 0.0) -> None:
            self.n, self.x = n, x

    check_arguments("part", Part, {"n": 2, "x": -1e300})
    with pytest.raises(ConfigError, match=r"^part\.n: expected int >= 2, got 1$"):
        check_arguments("part", Part, {"n": 1})
    with pytest.raises(ConfigError, match=r"^part\.x: expected finite float, got inf$"):
        check_arguments("part", Part, {"x": math.inf})
    with pytest.raises(ConfigError, match=r"^part\._args_: not a setting"):
        check_arguments("part", Part, {"_args_": [1]})


#: Number settings that are deliberately unbounded (any finite value is meaningful).
UNBOUNDED = {"seed", "min_grade", "retrieval_min_grade"}


@pytest.mark.parametrize(
    "cls",
    [RunSettings, IdContextPrecision, StringContextPrecision, BM25, Dense, Hybrid, Precomputed],
)
def test_every_number_setting_declares_its_range(cls: type) -> None:
    """The class, not the cases: a number setting without a ``Range`` is a decision."""
    hints = typing.get_type_hints(cls.__init__, include_extras=True)

    def numbers_without_range(annotation: Any) -> bool:
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is Annotated:
            return args[0] in (int, float) and not any(isinstance(a, Range) for a in args[1:])
        if args:
            return any(numbers_without_range(a) for a in args)
        return annotation in (int, float)

    bare = {k for k, a in hints.items() if k != "return" and numbers_without_range(a)}
    assert bare <= UNBOUNDED, bare - UNBOUNDED


def test_constructors_refuse_what_the_config_check_refuses() -> None:
    """The Python API builds parts without a config: the same ranges hold there."""
    for build in (
        lambda: IdContextPrecision("m", eps=math.inf),
        lambda: IdContextPrecision("m", min_grade=math.nan),
        lambda: StringContextPrecision("m", threshold=math.nan),
        lambda: StringContextPrecision("m", workers=0),
        lambda: BM25(k1=math.inf),
        lambda: BM25(delta=-1),
        lambda: Precomputed(top_k="3"),  # type: ignore[arg-type]
        lambda: RunSettings(retrieval_ks=[0]),
        lambda: RunSettings(max_unscored_frac=math.nan),
    ):
        with pytest.raises(ConfigError):
            build()


@pytest.mark.heavy
@pytest.mark.parametrize("device", ["'cuda 1'", "GPU", "cuda:x"])
def test_a_malformed_device_is_named_before_the_model_loads(tmp_path: Path, device: str) -> None:
    pytest.importorskip("torch")
    result = run_cli("retriever=dense", f"retriever.device={device}", "tracking=none",
                     cwd=tmp_path)
    fails(result, "retriever.device: expected a torch device such as cpu, cuda, cuda:1 or mps")
