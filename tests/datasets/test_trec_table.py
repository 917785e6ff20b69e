"""The compact query-id table and qrels of ``dataset=trec`` (``trec_table``): the same
answers as a dict, whatever the hash, and grades and offsets that widen when they must."""

from __future__ import annotations

import random
from array import array
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core.errors import DatasetError
from harness.datasets.trec import TrecDataset
from harness.datasets.trec_files import load_trec_qrels
from harness.datasets.trec_index import RunIndex
from harness.datasets.trec_table import IdTable, Qrels, _put

HASHES: dict[str, Callable[[str], int]] = {
    "builtin": hash,
    "constant": lambda s: 7,            # every id collides
    "length": len,
    "8 bits": lambda s: hash(s) & 0xFF,
    "negative": lambda s: -abs(hash(s)) - 1,
    "high bits only": lambda s: (hash(s) & 0xFF) << 40,  # the low 32 bits all 0
}
ODD = ["", "q1", "q01", "qé", "✓", "𝄞x", "a" * 300, "\u2028", "x\x00y", "中文"]


def _ids(rng: random.Random, n: int) -> list[str]:
    pool = ODD + [f"q{rng.randrange(n)}" for _ in range(n)]
    return [rng.choice(pool) for _ in range(3 * n)]


@pytest.mark.parametrize("name", sorted(HASHES))
def test_the_table_answers_as_a_dict(name: str) -> None:
    rng = random.Random(name)
    table, oracle = IdTable(hash_fn=HASHES[name]), dict[str, int]()
    for qid in _ids(rng, 400):
        if rng.random() < 0.3:
            assert table.get(qid) == oracle.get(qid)
            assert (qid in table) == (qid in oracle)
        assert table.add(qid) == oracle.setdefault(qid, len(oracle))
        assert len(table) == len(oracle)
    assert list(table.items()) == list(oracle.items())
    assert list(table) == list(oracle)
    assert [table.id_at(i) for i in range(len(table))] == list(oracle)
    assert table.get("never added") is None and 3 not in table


def test_two_ids_of_one_hash_stay_two() -> None:
    table = IdTable(hash_fn=lambda s: 0)
    assert [table.add(q) for q in ["a", "b", "a", "ab", "b"]] == [0, 1, 0, 2, 1]
    assert (table.get("a"), table.get("b"), table.get("ab"), table.get("ba")) == (0, 1, 2, None)


def test_a_prefix_or_an_extension_is_another_id() -> None:
    """Ids packed end to end: ``ab`` + ``c`` is not ``abc``, nor ``a`` + ``bc``."""
    table = IdTable(hash_fn=lambda s: 1)
    for qid in ["ab", "c", "a", "bc"]:
        table.add(qid)
    assert table.get("abc") is None and table.get("b") is None
    assert table.get("bc") == 3


def test_offsets_widen_past_32_bits() -> None:
    small = _put(array("I", [0, 0]), 1, 5)
    assert small.typecode == "I" and list(small) == [0, 5]
    wide = _put(array("I", [3, 0]), 1, 1 << 32)
    assert wide.typecode == "q" and list(wide) == [3, 1 << 32]


def test_grades_past_32_bits_are_kept_as_floats() -> None:
    qrels = Qrels()
    qrels.put("q1", {"a": 2.0, "b": -1.0})
    assert qrels._grades.typecode == "i"
    qrels.put("q2", {"c": float(1 << 40), "d": 0.0})
    qrels.put("q3", {"e": 3.0})
    assert qrels._grades.typecode == "d"
    assert qrels["q1"] == [("a", 2.0), ("b", -1.0)]
    assert qrels["q2"] == [("c", 1099511627776.0), ("d", 0.0)]
    assert qrels.at(2) == [("e", 3.0)] and list(qrels.grades(2)) == [3.0]
    assert all(type(g) is float for _, g in qrels["q1"] + qrels["q3"])


def test_qrels_count_only_judged_queries_of_the_shared_table() -> None:
    table = IdTable()
    for qid in ["r0", "r1", "r2"]:  # the run's queries, r1 not judged
        table.add(qid)
    qrels = Qrels(table)
    qrels.put("r2", {"x": 1.0})
    qrels.put("r0", {"y": 0.0})
    qrels.put("extra", {"z": 2.0})
    assert (qrels.count(), qrels.count(0, 3), qrels.count(3)) == (3, 2, 1)
    assert [qrels.has(i) for i in range(5)] == [True, False, True, True, False]
    assert "r1" not in qrels and qrels.index("extra") == 3 and qrels.first == "r2"


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), "utf-8")
    return path


def test_colliding_hashes_end_to_end(tmp_path: Path) -> None:
    """A run read with every id on one hash numbers, groups and reports its queries as a
    dict does (the oracle: the file's columns read with ``str.split``)."""
    rng = random.Random(3)
    qids = [f"q{i}" for i in range(60)] + ["qé", "✓"]
    lines = [f"{q} Q0 d{rng.randrange(999)}-{k} {k} {rng.random():.3f} t"
             for k in range(4) for q in qids]  # round robin: every query in 4 blocks
    run = _write(tmp_path / "run.txt", lines)
    qrels_lines = [f"{q} 0 d{i} {i % 4}" for i, q in enumerate(reversed(qids + ["new"]))]
    qrels_path = _write(tmp_path / "qrels.txt", qrels_lines)
    index = RunIndex(run)
    index.table = IdTable(hash_fn=lambda s: 42)
    index.build()
    qrels = load_trec_qrels(qrels_path, index.table)
    oracle = {q: i for i, q in enumerate(dict.fromkeys(line.split()[0] for line in lines))}
    oracle.setdefault("new", len(oracle))
    assert dict(index.table.items()) == oracle and index.count == len(qids)
    for line in qrels_lines:
        q, _, d, g = line.split()
        assert qrels[q] == [(d, float(int(g)))]


def test_a_repeat_across_blocks_names_its_query_with_colliding_hashes(tmp_path: Path) -> None:
    run = _write(tmp_path / "run.txt", ["a Q0 d1 1 1 t", "b Q0 d1 1 1 t", "c Q0 d2 1 1 t",
                                        "b Q0 d1 2 0.5 t"])
    index = RunIndex(run)
    index.table = IdTable(hash_fn=lambda s: -5)
    with pytest.raises(DatasetError) as err:
        index.build()
    assert str(err.value) == (
        f"{run}:4: field 'doc_id': query 'b' lists document 'd1' again (first on line 2); "
        "a run ranks each document once (trec_eval refuses duplicate docs): keep one")


def test_large_grades_reach_the_samples(tmp_path: Path) -> None:
    run = _write(tmp_path / "run.txt", ["q1 Q0 a 1 2 t", "q1 Q0 b 2 1 t", "q2 Q0 c 1 1 t"])
    qrels = _write(tmp_path / "qrels.txt", ["q1 0 a 3", "q1 0 b 5000000000", "q2 0 c -2147483649"])
    data = TrecDataset(run, qrels)
    first, second = data.samples()
    assert first.reference_context_grades == (3.0, 5e9)
    assert second.reference_context_grades == (-2147483649.0,)
    assert data.describe()["grades"] == {"-2.14748e+09": 1, "3": 1, "5e+09": 1}


@pytest.mark.parametrize("name", ["builtin", "constant"])
def test_a_sealed_table_reads_and_looks_up_as_before(name: str) -> None:
    table = IdTable(hash_fn=HASHES[name])
    ids = [f"q{i}" for i in range(100)]
    for qid in ids:
        table.add(qid)
    table.seal()
    assert list(table.items()) == [(q, i) for i, q in enumerate(ids)]
    assert table.id_at(57) == "q57" and len(table) == 100
    assert table.get("q42") == 42 and table.get("q100") is None
    assert table.add("new") == 100 and table.add("q0") == 0 and table.get("new") == 100
