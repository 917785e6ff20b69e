"""BEIR-layout datasets: graded qrels, judged negatives, missing files, malformed lines."""

import dataclasses
import shutil
from pathlib import Path

import pytest
from conftest import CONF, TEST_DATA, shared_data
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig

from harness.core.errors import ConfigError, DatasetError
from harness.core.types import Corpus, Document
from harness.datasets.beir.dataset import BeirDataset
from harness.metrics.id_based import IdContextPrecision
from harness.metrics.retrieval import recall_at_k, sample_grades

TINY = TEST_DATA / "beir_tiny"
TREC_TINY = TEST_DATA / "trec_dl19_tiny"


@pytest.fixture
def tiny(tmp_path):
    """A writable copy of the tiny BEIR folder."""
    return Path(shutil.copytree(TINY, tmp_path / "beir_tiny"))


def test_samples_in_query_order_with_graded_qrels():
    ds = BeirDataset(TINY)
    ds.check()
    samples = list(ds.samples())
    # q5 has no test judgments and is skipped; q9 is judged but not in queries.jsonl
    assert [s.id for s in samples] == ["q1", "q2", "q3", "q4"]
    q1 = samples[0]
    assert q1.user_input == "How do plants make glucose from sunlight?"
    assert q1.reference_context_ids == ("d1", "d2")
    assert q1.reference_context_grades == (2.0, 0.0)
    assert q1.retrieved_contexts is None and q1.retrieved_context_ids is None
    assert q1.reference is None
    # only grade >= 1 texts, "title\n\ntext"; an empty title gives the text alone (d3)
    assert q1.reference_contexts == (
        "Photosynthesis\n\nPlants convert sunlight, water and carbon dioxide into glucose and "
        "oxygen inside the chloroplast.",
    )
    q2 = samples[1]
    assert q2.reference_context_grades == (2.0, 1.0, 0.0)
    assert q2.reference_contexts[0] == (
        "The mitochondria is the powerhouse of the cell: it produces most of the ATP."
    )
    assert len(q2.reference_contexts) == 2
    assert samples[3].reference_context_ids == ("<dbpedia:Eiffel_Tower>", "d7")


def test_score_zero_rows_are_judged_negatives_not_relevant():
    q1 = next(BeirDataset(TINY).samples())
    assert "d2" in q1.reference_context_ids  # kept ...
    assert sample_grades(q1)["d2"] == 0.0  # ... as grade 0
    retrieved = dataclasses.replace(q1, retrieved_context_ids=("d2",))
    metric = IdContextPrecision("id_based", min_grade=1)
    assert metric.score_one(retrieved).score == 0.0  # a judged negative is not relevant
    assert metric.score_one(dataclasses.replace(q1, retrieved_context_ids=("d1",))).score == 1.0
    assert recall_at_k(["d2"], sample_grades(q1), 10) == 0.0


def test_min_grade_selects_reference_texts():
    q2 = list(BeirDataset(TINY, min_grade=2).samples())[1]
    assert len(q2.reference_contexts) == 1 and q2.reference_context_ids == ("d3", "d2", "d1")


def test_answers_limit_batches_and_count():
    ds = BeirDataset(TINY, answers=TINY / "answers.jsonl", limit=3)
    assert ds.estimate_count() == 3
    samples = list(ds.samples())
    assert [s.reference for s in samples] == [
        "By photosynthesis, in the chloroplast.",
        "In the mitochondria.",
        None,
    ]
    assert [len(b) for b in ds.batches(2)] == [2, 1]
    assert [s.id for s in ds.samples(limit=1)] == ["q1"]
    assert ds.describe()["queries_with_answer"] == 2


def test_describe_reports_gaps():
    d = BeirDataset(TINY).describe()
    assert d["queries"] == 4 and d["documents"] == 8 and d["qrels"] == 10
    assert d["grades"] == {"0": 3, "1": 4, "2": 3}
    assert d["qrels_docs_missing_from_corpus"] == 1  # d404: kept (counts for recall)
    assert d["qrels_docs_missing_examples"] == ["d404"]
    assert d["qrels_queries_missing_from_queries"] == 1  # q9
    q3 = list(BeirDataset(TINY).samples())[2]
    assert "d404" in q3.reference_context_ids
    assert recall_at_k(["d4", "d5"], sample_grades(q3), 10) == pytest.approx(2 / 3)


def test_other_split():
    [s] = BeirDataset(TINY, split="train").samples()
    assert s.id == "q5" and s.reference_context_ids == ("d8",)


def test_corpus_is_loaded_once_as_documents():
    ds = BeirDataset(TINY)
    corpus = ds.corpus()
    assert isinstance(corpus, Corpus) and corpus is ds.corpus()
    docs = corpus.documents
    assert len(docs) == 8
    assert docs[0] == Document("d1", "Photosynthesis", docs[0].text)
    assert docs[2].content == docs[2].text  # empty title
    assert docs[5].id == "<dbpedia:Eiffel_Tower>"


def test_dataset_seam_attributes():
    ds = BeirDataset(TINY, min_grade=2)
    assert ds.source == str(TINY) and ds.min_grade == 2.0
    assert BeirDataset(TINY).min_grade == 1.0


def test_corpus_limit_keeps_judged_documents():
    ds = BeirDataset(TINY, corpus_limit=1)
    ids = [d.id for d in ds.corpus().documents]
    assert ids[0] == "d1"
    assert {"d2", "d3", "d4", "d5", "<dbpedia:Eiffel_Tower>", "d7"} <= set(ids)
    assert "d8" not in ids  # neither among the first 1 nor judged


def test_hashes(tiny):
    ds = BeirDataset(tiny)
    sha, key = ds.sha256(), ds.corpus().key
    (tiny / "qrels" / "test.tsv").write_text(
        (tiny / "qrels" / "test.tsv").read_text() + "q4\td8\t0\n"
    )
    changed = BeirDataset(tiny)
    assert changed.sha256() != sha  # the data changed ...
    assert changed.corpus().key == key  # ... but not the indexed text
    corpus = tiny / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("Photosynthesis", "Photosynthesis!", 1))
    assert BeirDataset(tiny).corpus().key != key  # the indexed text changed


def test_missing_folder_and_files(tiny, tmp_path):
    with pytest.raises(DatasetError, match="folder not found"):
        BeirDataset(tmp_path / "nope").check()
    (tiny / "corpus.jsonl").unlink()
    with pytest.raises(DatasetError, match=r"corpus\.jsonl: file not found"):
        BeirDataset(tiny).check()
    with pytest.raises(
        DatasetError, match=r"qrels/dev\.tsv: file not found; the splits here are test, train"
    ):
        BeirDataset(TINY, split="dev").check()
    with pytest.raises(DatasetError, match=r"nope\.jsonl: file not found \(dataset\.answers\)"):
        BeirDataset(TINY, answers=tmp_path / "nope.jsonl").check()
    with pytest.raises(DatasetError, match="no folder given"):
        BeirDataset(None)
    with pytest.raises(ConfigError, match="dataset.limit"):
        BeirDataset(TINY, limit=-1)


@pytest.mark.parametrize(
    ("file", "line", "message"),
    [
        ("corpus.jsonl", '{"_id": "d9", "title": "t"', r"corpus\.jsonl:9: not valid JSON"),
        ("corpus.jsonl", '{"title": "t", "text": "x"}', r"corpus\.jsonl:9: field '_id': missing"),
        (
            "corpus.jsonl",
            '{"_id": "d1", "text": "again"}',
            r"corpus\.jsonl:9: field '_id': duplicate id 'd1' \(first used on line 1\)",
        ),
        (
            "corpus.jsonl",
            '{"_id": "d9", "text": 5}',
            r"corpus\.jsonl:9: field 'text': expected a string",
        ),
        ("queries.jsonl", '{"_id": "q7"}', r"queries\.jsonl:6: field 'text': missing"),
        ("queries.jsonl", "[1, 2]", r"queries\.jsonl:6: expected a JSON object"),
        (
            "queries.jsonl",
            '{"_id": "q7", "text": "t", "n": ' + "1" * 5000 + "}",
            r"queries\.jsonl:6: not valid JSON \(Exceeds the limit",
        ),
        ("queries.jsonl", "[" * 100_000, r"queries\.jsonl:6: not valid JSON \(nested too deeply"),
        ("qrels/test.tsv", "q1\td3", r"test\.tsv:13: expected 3 tab-separated columns"),
        ("qrels/test.tsv", "q1\td3\thigh", r"test\.tsv:13: field 'score': expected a number"),
        (
            "qrels/test.tsv",
            "q1\td1\t1",
            r"test\.tsv:13: field 'score': query 'q1', document 'd1' judged 1 here and 2 on line 2",
        ),
    ],
)
def test_malformed_lines_name_file_line_and_field(tiny, file, line, message):
    path = tiny / file
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(DatasetError, match=message):
        list(BeirDataset(tiny).samples())


def test_qrels_without_header_keep_their_first_row(tiny):
    qrels = tiny / "qrels" / "test.tsv"
    qrels.write_text("".join(qrels.read_text().splitlines(keepends=True)[1:]))
    assert next(BeirDataset(tiny).samples()).reference_context_ids == ("d1", "d2")


def test_bad_utf8_names_the_line(tiny):
    with open(tiny / "queries.jsonl", "ab") as f:
        f.write(b'{"_id": "q8", "text": "caf\xe9"}\n')
    with pytest.raises(DatasetError, match=r"queries\.jsonl:6: not valid UTF-8"):
        list(BeirDataset(tiny).samples())


def _compose(*overrides):
    with initialize_config_dir(config_dir=str(CONF)):
        cfg = compose("config", overrides=[*overrides, "tracking=none"], return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        return cfg


def test_shared_dataset_configs_point_beside_the_repo(monkeypatch):
    monkeypatch.delenv("HARNESS_SHARED_DATA", raising=False)
    for option, folder in [
        ("scifact", "beir_scifact"),
        ("trec_dl19", "trec_dl19_passage_subset"),
        ("dbpedia_entity", "dbpedia_entity_subset"),
    ]:
        cfg = _compose(f"dataset={option}")
        assert cfg.dataset.path == f"../shared/data/{folder}"
        assert cfg.dataset._target_ == "harness.datasets.beir.BeirDataset"
    assert _compose("dataset=trec_dl19").dataset.min_grade == 2
    monkeypatch.setenv("HARNESS_SHARED_DATA", "/data/shared")
    assert _compose("dataset=scifact").dataset.path == "/data/shared/beir_scifact"


def test_beir_config_needs_a_path(tmp_path):
    from harness.config.build import instantiate

    with pytest.raises(ConfigError, match="dataset.path"):
        instantiate(_compose("dataset=beir"), "dataset")
    ds = instantiate(
        _compose("dataset=beir", f"dataset.path={TINY}", "dataset.limit=2"), "dataset"
    )
    assert isinstance(ds, BeirDataset) and ds.estimate_count() == 2


def test_trec_dl19_tiny_is_what_its_source_note_says():
    ds = BeirDataset(TREC_TINY, min_grade=2)
    d = ds.describe()
    # SOURCE.md: 4 judged queries (789774 has none), 18 judgments each, 78 passages
    assert d["queries"] == 4 and d["qrels"] == 72
    assert d["grades"] == {"1": 38, "2": 28, "3": 6}
    assert d["qrels_docs_missing_from_corpus"] == 0
    assert len(ds.corpus().documents) == 78
    samples = list(ds.samples())
    assert [s.id for s in samples] == ["19335", "47923", "87181", "87452"]
    assert [len(s.reference_context_ids) for s in samples] == [18, 18, 18, 18]
    # grade >= 2 is relevant: 7 for 19335 (all it has), 9 for each of the others
    assert [len(s.reference_contexts) for s in samples] == [7, 9, 9, 9]


def _lines(path: Path) -> list[str]:
    return [x for x in path.read_text("utf-8").split("\n") if x]


@pytest.mark.shared_data("trec_dl19_passage_subset")
def test_trec_dl19_tiny_is_cut_verbatim_from_the_full_set():
    full = shared_data("trec_dl19_passage_subset")
    for name in ("queries.jsonl", "corpus.jsonl", "qrels/test.tsv"):
        cut, whole = _lines(TREC_TINY / name), _lines(full / name)
        assert set(cut) <= set(whole), name
        order = {line: i for i, line in enumerate(whole)}
        assert [order[x] for x in cut] == sorted(order[x] for x in cut), name  # file order
    assert _lines(TREC_TINY / "qrels/test.tsv")[0] == "query-id\tcorpus-id\tscore"


# the full sets (SOURCE.md's numbers): the shared_data lane


@pytest.mark.shared_data("dbpedia_entity_subset")
def test_dbpedia_score_zero_rows_are_kept_as_grade_zero():
    ds = BeirDataset(shared_data("dbpedia_entity_subset"))
    d = ds.describe()
    # SOURCE.md: 3,709 judgments, 2,829 grade 0, 614 grade 1, 266 grade 2, 40 queries
    assert d["queries"] == 40 and d["qrels"] == 3709
    assert d["grades"] == {"0": 2829, "1": 614, "2": 266}
    assert d["qrels_docs_missing_from_corpus"] == 0
    samples = list(ds.samples())
    negatives = sum(g == 0 for s in samples for g in s.reference_context_grades)
    relevant_texts = sum(len(s.reference_contexts) for s in samples)
    assert negatives == 2829 and relevant_texts == 614 + 266
    assert all(i.startswith("<dbpedia:") for s in samples for i in s.reference_context_ids)


@pytest.mark.shared_data("beir_scifact", "trec_dl19_passage_subset")
def test_scifact_and_trec_dl19_load():
    sci = BeirDataset(shared_data("beir_scifact"))
    assert sci.estimate_count() == 300 and len(sci.corpus().documents) == 5183
    assert sci.describe()["qrels"] == 339
    dl = BeirDataset(shared_data("trec_dl19_passage_subset"), min_grade=2)
    d = dl.describe()
    assert d["queries"] == 43 and d["grades"] == {"1": 1601, "2": 1804, "3": 697}
