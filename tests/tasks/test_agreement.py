"""task=judge_agreement: a judge config against human relevance labels (TREC DL19: the
cut in tests/data/trec_dl19_tiny, and the full set in the shared_data lane)."""

import json
from pathlib import Path

import pytest
from conftest import TEST_DATA, run_cli, shared_data

from harness.tasks.agreement.stats import agreement

TREC_TINY = TEST_DATA / "trec_dl19_tiny"


def test_agreement_formulas_by_hand() -> None:
    # 4 pairs: tp, fp, fn, tn -> accuracy 0.5; expected agreement 0.5 -> kappa 0
    r = agreement([1, 0, 1, 0], [1, 1, 0, 0], [2, 1, 3, 0])
    assert (r["accuracy"], r["precision"], r["recall"], r["cohen_kappa"]) == (0.5, 0.5, 0.5, 0.0)
    assert r["by_grade"] == {"0": {"judged_relevant": 0, "judged_not": 1},
                             "1": {"judged_relevant": 1, "judged_not": 0},
                             "2": {"judged_relevant": 1, "judged_not": 0},
                             "3": {"judged_relevant": 0, "judged_not": 1}}
    assert agreement([1, 0], [1, 0], [2, 0])["cohen_kappa"] == 1.0


def trec_dl19(which: str) -> tuple[Path, list[str]]:
    """The folder of the ``tiny`` cut or the ``full`` set, and the overrides that read it:
    the full set through the config's own path (``$HARNESS_SHARED_DATA``)."""
    if which == "tiny":
        return TREC_TINY, [f"dataset.path={TREC_TINY}"]
    return shared_data("trec_dl19_passage_subset"), []


BOTH = ["tiny", pytest.param("full", marks=pytest.mark.shared_data("trec_dl19_passage_subset"))]


@pytest.mark.parametrize("which", BOTH)
def test_judge_that_disagrees_on_a_known_fraction(which: str, tmp_path: Path) -> None:
    from helpers.judge_server import JudgeServer, _unit

    trec, where = trec_dl19(which)
    queries = {q["_id"]: q["text"] for q in map(json.loads, (trec / "queries.jsonl").open())}
    corpus: dict[str, str] = {}
    for d in map(json.loads, (trec / "corpus.jsonl").open()):
        corpus[d["_id"]] = d["text"] if not d["title"] else f"{d['title']}\n\n{d['text']}"
    labels: dict[str | tuple[str, str], int | float] = {}
    for line in list((trec / "qrels" / "test.tsv").open())[1:]:
        qid, did, grade = line.split()
        labels[(queries[qid], corpus[did])] = int(float(grade) >= 2)
    with JudgeServer(labels) as server:
        server.configure(flip=0.3)
        result = run_cli("task=judge_agreement", "dataset=trec_dl19", *where, "dataset.limit=4",
                         "task.pairs_per_query=15", "task.min_grade=2", "judge=local",
                         f"judge.base_url={server.base_url}", "judge.model=test-judge",
                         "tracking=none", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert server.stats.unknown_chunks == 0
    rows = [json.loads(x) for x in (result.out_dir / "agreement.jsonl").read_text().splitlines()]
    assert len(rows) == 60
    # the test judge flips a verdict iff hash(seed 0, passage) < 0.3: recompute each row
    for row in rows:
        text = corpus[row["doc_id"]]
        flipped = _unit(f"0\0{text}") < 0.3
        assert row["judge"] == (1 - row["human"] if flipped else row["human"])
    disagree = sum(r["judge"] != r["human"] for r in rows)
    summary = result.summary()
    assert summary["accuracy"] == (60 - disagree) / 60
    assert 0 < disagree < 60 and summary["pairs"] == 60
    expected = agreement(
        [r["human"] for r in rows], [r["judge"] for r in rows], [r["grade"] for r in rows]
    )
    assert summary["cohen_kappa"] == expected["cohen_kappa"]
