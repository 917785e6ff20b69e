"""``dataset=trec`` reads a run by byte offsets: the samples do not depend on how the run
file's lines are ordered, and duplicates are refused at the first repeated line.

The expected samples are written out here from the definition (trec_eval's order: score
descending, ties by document id descending; queries in order of first appearance)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.core.errors import DatasetError
from harness.datasets.trec import TrecDataset

Line = tuple[str, str, float]  # qid, docid, score


def _lines(seed: int) -> list[Line]:
    """Queries q0..q29 with 1-12 documents each; scores from few values (ties)."""
    rng = random.Random(seed)
    out = []
    for q in range(30):
        for d in rng.sample(range(60), rng.randint(1, 12)):
            out.append((f"q{q}", f"d{d}", float(rng.choice([1, 2, 2.5, 3, 7]))))
    return out


def _write(path: Path, lines: list[Line], comments: bool = False) -> Path:
    text = []
    for i, (q, d, s) in enumerate(lines):
        if comments and i % 5 == 0:
            text.append("# a comment\n\n")
        text.append(f"{q} Q0 {d} {i + 1} {s:g} tag extra\n")
    path.write_text("".join(text), "utf-8")
    return path


def _qrels(path: Path) -> Path:
    rng = random.Random(9)
    rows = [f"q{q} 0 d{d} {rng.choice([0, 1, 2, 3])}"
            for q in range(0, 32, 1) if q % 7 != 3 for d in rng.sample(range(60), 6)]
    path.write_text("\n".join(rows) + "\n", "utf-8")
    return path


def _expected(lines: list[Line], judged: set[str]) -> list[tuple[str, tuple[str, ...]]]:
    by_query: dict[str, dict[str, float]] = {}
    for q, d, s in lines:
        by_query.setdefault(q, {})[d] = s
    out = []
    for q, scored in by_query.items():
        if q in judged:
            by_id = sorted(scored.items(), key=lambda p: p[0], reverse=True)
            out.append((q, tuple(d for d, _ in sorted(by_id, key=lambda p: -p[1]))))
    return out


def _samples(run: Path, qrels: Path, **kw: object) -> list[tuple[str, tuple[str, ...]]]:
    data = TrecDataset(run, qrels, **kw)  # type: ignore[arg-type]
    return [(s.id, tuple(s.retrieved_context_ids or ())) for s in data.samples()]


def _shapes(lines: list[Line], rng: random.Random) -> dict[str, list[Line]]:
    """The same lines in several orders; queries keep their order of first appearance."""
    order = {q: i for i, q in enumerate(dict.fromkeys(q for q, _, _ in lines))}
    grouped = sorted(lines, key=lambda t: order[t[0]])
    shuffled = grouped[:]
    rng.shuffle(shuffled)
    firsts = [next(x for x in grouped if x[0] == q) for q in order]
    rest = [t for t in shuffled if t not in firsts]
    half = len(grouped) // 2
    split = grouped[:half] + [t for t in grouped[half:] if t[0] != grouped[half][0]]
    split += [t for t in grouped[half:] if t[0] == grouped[half][0]]
    return {
        "sorted": grouped,
        "reverse_within_queries": [t for q in order for t in reversed(
            [x for x in grouped if x[0] == q])],
        "interleaved": firsts + rest,  # first line of each query in order, then shuffled
        "round_robin": [t for i in range(12) for q in order
                        for t in [x for x in grouped if x[0] == q][i:i + 1]],
        "one_query_in_two_blocks": split,
    }


@pytest.mark.parametrize("comments", [False, True])
def test_every_order_gives_the_same_samples(tmp_path: Path, comments: bool) -> None:
    lines = _lines(3)
    qrels = _qrels(tmp_path / "qrels.txt")
    judged = {f"q{q}" for q in range(32) if q % 7 != 3}
    want = _expected(lines, judged)
    for name, shape in _shapes(lines, random.Random(4)).items():
        assert sorted(shape) == sorted(lines), name
        run = _write(tmp_path / f"{name}.txt", shape, comments)
        assert _samples(run, qrels) == want, name


def test_reverse_sorted_queries_keep_file_order(tmp_path: Path) -> None:
    lines = sorted(_lines(5), key=lambda t: -int(t[0][1:]))
    qrels = _qrels(tmp_path / "qrels.txt")
    got = _samples(_write(tmp_path / "run.txt", lines), qrels)
    assert [q for q, _ in got] == [f"q{q}" for q in range(29, -1, -1) if q % 7 != 3]
    assert got == _expected(lines, {q for q, _ in got})


def test_complete_limit_and_describe_on_a_split_run(tmp_path: Path) -> None:
    lines = _lines(6)
    shape = _shapes(lines, random.Random(1))["round_robin"]
    run, qrels = _write(tmp_path / "run.txt", shape), _qrels(tmp_path / "qrels.txt")
    data = TrecDataset(run, qrels, complete=True, limit=40)
    ids = [s.id for s in data.samples()]
    assert ids == [f"q{q}" for q in range(30) if q % 7 != 3] + ["q30"]  # q31: not judged
    assert [s.retrieved_context_ids for s in data.samples()][-1] == ()
    info = data.describe()
    assert (info["queries"], info["run_queries_without_qrels"],
            info["qrels_queries_missing_from_run"]) == (27, 4, 1)
    assert info["run_tags"] == ["tag"]


@pytest.mark.parametrize(("rows", "line", "first"), [
    (["q1 Q0 a 1 1 t", "q2 Q0 b 1 1 t", "q1 Q0 a 2 1 t"], 3, 1),  # across blocks
    (["q1 Q0 a 1 1 t", "q2 Q0 b 1 1 t", "q2 Q0 b 2 1 t", "q1 Q0 a 2 1 t"], 3, 2),
    (["q1 Q0 a 1 1 t", "q2 Q0 b 1 1 t", "q1 Q0 a 2 1 t", "q2 Q0 b 2 1 t"], 3, 1),
    (["q1 Q0 a 1 1 t", "q2 Q0 b 1 1 t", "q1 Q0 c 1 1 t", "q1 Q0 c 2 1 t",
      "q2 Q0 b 2 1 t"], 4, 3),
])
def test_the_first_repeated_line_is_the_error(tmp_path: Path, rows: list[str], line: int,
                                              first: int) -> None:
    run = tmp_path / "run.txt"
    run.write_text("\n".join(rows) + "\n", "utf-8")
    with pytest.raises(DatasetError) as e:
        TrecDataset(run, _qrels(tmp_path / "qrels.txt")).estimate_count()
    assert str(e.value).startswith(f"{run}:{line}: field 'doc_id': query ")
    assert f"again (first on line {first})" in str(e.value)


def test_a_repeat_before_a_bad_line_is_said_first(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\nq1 Q0 a 2 1 t\nq3 Q0 c x 1 t\n", "utf-8")
    with pytest.raises(DatasetError, match=r"run\.txt:3: field 'doc_id'"):
        TrecDataset(run, _qrels(tmp_path / "qrels.txt")).estimate_count()
    run.write_text("q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\nq3 Q0 c x 1 t\nq1 Q0 a 2 1 t\n", "utf-8")
    with pytest.raises(DatasetError, match=r"run\.txt:3: field 'rank'"):
        TrecDataset(run, _qrels(tmp_path / "qrels.txt")).estimate_count()


def test_split_qrels_are_merged_and_repeats_refused(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq2 0 b 2\nq1 0 c 2.7\n", "utf-8")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 a 1 1 t\nq1 Q0 c 2 0.5 t\n", "utf-8")
    (sample,) = TrecDataset(run, qrels).samples()
    assert sample.reference_context_ids == ("a", "c")
    assert sample.reference_context_grades == (1.0, 2.0)
    qrels.write_text("q1 0 a 1\nq2 0 b 2\nq1 0 a 3\n", "utf-8")
    with pytest.raises(DatasetError) as e:
        TrecDataset(run, qrels).estimate_count()
    assert str(e.value) == (
        f"{qrels}:3: field 'relevance': query 'q1', document 'a' judged 3 here and 1 on "
        "line 1; trec_eval refuses a document judged twice: keep one judgment")
