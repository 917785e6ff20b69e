"""``dataset=trec`` reads the run back in windows of queries (``trec_index``): the samples,
the refused repeats and the qrels do not depend on where the windows fall.

The windows are made tiny here (a few blocks, a few hundred bytes, reads of neighbours
through gaps of 0 or 10 kB) so that every query, block and gap meets a window's edge. The
expected samples are written out from the definition: trec_eval's order (score descending,
ties by document id descending; the scores are halves, exact as C floats), queries in
order of first appearance, the judged ones only."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.core.errors import DatasetError
from harness.datasets import trec_index
from harness.datasets.trec import TrecDataset
from harness.datasets.trec_files import QueryIds

Line = tuple[str, str, float]
QUERIES = ["q0", "qé1", "q2", "q✓3", "q4", "q5", "q6", "q7", "q8", "q9"]


def _lines(seed: int) -> list[Line]:
    rng = random.Random(seed)
    return [(q, f"d{d}", rng.choice([0.5, 1.0, 2.0, 2.5]))
            for q in QUERIES for d in rng.sample(range(40), rng.randint(1, 9))]


def _write(path: Path, lines: list[Line], decorate: bool) -> Path:
    out = ["\ufeff# run\n"] if decorate else []
    for i, (q, d, s) in enumerate(lines):
        if decorate and i % 4 == 0:
            out.append("  # note\r\n\n")
        out.append(f"{q} Q0 {d} {i} {s} tag" + (" more text\r\n" if decorate else "\n"))
    path.write_bytes("".join(out).encode("utf-8"))
    return path


def _expected(lines: list[Line], judged: set[str]) -> list[tuple[str, tuple[str, ...]]]:
    by_query: dict[str, list[tuple[float, str]]] = {}
    for q, d, s in lines:
        by_query.setdefault(q, []).append((s, d))
    return [(q, tuple(d for _, d in sorted(pairs, reverse=True)))
            for q, pairs in by_query.items() if q in judged]


@pytest.fixture(params=[(3, 120, 0), (7, 400, 10_000), (1, 1, 0)], ids=str)
def tiny_windows(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks, size, gap = request.param
    monkeypatch.setattr(trec_index, "WINDOW_BLOCKS", blocks)
    monkeypatch.setattr(trec_index, "WINDOW_BYTES", size)
    monkeypatch.setattr(trec_index, "GAP", gap)


@pytest.mark.usefixtures("tiny_windows")
@pytest.mark.parametrize("decorate", [False, True])
def test_every_shape_reads_the_same_in_tiny_windows(tmp_path: Path, decorate: bool) -> None:
    lines = _lines(1)
    qrels = tmp_path / "qrels.txt"
    judged = [q for i, q in enumerate(QUERIES) if i % 3 != 1]
    qrels.write_text("".join(f"{q} 0 d{i} 1\n" for i, q in enumerate(judged)), "utf-8")
    rng = random.Random(2)
    shuffled = [lines[0], *rng.sample(lines[1:], len(lines) - 1)]
    rank = {q: i for i, q in enumerate(dict.fromkeys(q for q, _, _ in shuffled))}
    by_rank: dict[str, list[Line]] = {}
    for t in lines:
        by_rank.setdefault(t[0], []).append(t)
    robin = [by_rank[q][r] for r in range(9) for q in QUERIES if r < len(by_rank[q])]
    for name, shape in {"sorted": lines, "shuffled": shuffled, "round_robin": robin}.items():
        run = _write(tmp_path / f"{name}.txt", shape, decorate)
        got = [(s.id, s.retrieved_context_ids) for s in TrecDataset(run, qrels).samples()]
        want = _expected(sorted(shape, key=lambda t: rank[t[0]]) if name == "shuffled"
                         else shape, set(judged))
        assert got == want, name
        data = TrecDataset(run, qrels, complete=True, limit=5)
        assert [s.id for s in data.samples()] == [q for q, _ in want][:5]


@pytest.mark.usefixtures("tiny_windows")
def test_a_repeat_across_blocks_is_found_in_tiny_windows(tmp_path: Path) -> None:
    rows = [f"q{q} Q0 d{d} 1 1 t" for d in range(4) for q in range(6)]
    rows.insert(20, "q4 Q0 d1 9 1 t")  # line 21 repeats line 11 (q4, d1)
    rows.append("q2 Q0 d0 9 1 t")      # a later repeat (line 26 of line 3)
    run = tmp_path / "run.txt"
    run.write_text("\n".join(rows) + "\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", "utf-8")
    with pytest.raises(DatasetError) as e:
        TrecDataset(run, tmp_path / "qrels.txt").estimate_count()
    assert str(e.value) == (
        f"{run}:21: field 'doc_id': query 'q4' lists document 'd1' again (first on line 11);"
        " a run ranks each document once (trec_eval refuses duplicate docs): keep one")


def test_fractional_grades_are_counted_and_five_lines_kept(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i % 3} 0 d{i} {i % 4}.5\n" for i in range(12)), "utf-8")
    run = tmp_path / "run.txt"
    run.write_text("q0 Q0 d0 1 1 t\nq1 Q0 d1 1 1 t\n", "utf-8")
    data = TrecDataset(run, qrels)
    info = data.describe()
    assert info["fractional_grades_truncated"] == 12
    assert info["fractional_grades_lines"] == [1, 2, 3, 4, 5]
    assert info["grades"] == {"0": 2, "1": 2, "2": 2, "3": 2}  # q0: 0 3 2 1, q1: 1 0 3 2
    assert info["qrels_queries_missing_from_run"] == 1
    (first, _) = data.samples()
    assert first.reference_context_ids == ("d0", "d3", "d6", "d9")
    assert first.reference_context_grades == (0.0, 3.0, 2.0, 1.0)


def test_query_ids_keep_the_order_and_free_the_table() -> None:
    table = {q: i for i, q in enumerate(["b", "qé", "a" * 300, "✓"])}
    ids = QueryIds(table)
    assert table == {}
    assert list(ids.items()) == [("b", 0), ("qé", 1), ("a" * 300, 2), ("✓", 3)]
    assert len(ids) == 4
