"""Dataset loading: ragas field names, mapping, ids, and malformed input."""

import json

import pytest

from harness.core.errors import ConfigError, DatasetError
from harness.core.types import SAMPLE_FIELDS
from harness.datasets.files import CsvDataset, JsonlDataset, ParquetDataset, SampleDataset
from harness.datasets.memory import RecordsDataset, as_record

ROW = {
    "user_input": "Where is the Eiffel Tower?",
    "reference": "In Paris.",
    "response": "Paris.",
    "retrieved_contexts": ["The Eiffel Tower is in Paris.", "Berlin has a gate."],
    "retrieved_context_ids": ["d1", 2],
    "reference_contexts": ["The Eiffel Tower is in Paris."],
    "reference_context_ids": ["d1"],
}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def load(ds):
    return list(ds.samples())


def test_jsonl_fields_and_default_ids(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [ROW, {**ROW, "id": "x"}, ROW])
    samples = load(JsonlDataset(path))
    assert [s.id for s in samples] == ["0", "x", "2"]
    s = samples[0]
    assert s.user_input == ROW["user_input"]
    assert s.retrieved_context_ids == ("d1", "2")  # ids normalised with str()
    assert s.retrieved_contexts == tuple(ROW["retrieved_contexts"])


def test_field_mapping(tmp_path):
    row = {"question": "q", "contexts": ["a"], "gt_ids": ["1"], "ids": [1]}
    path = write_jsonl(tmp_path / "d.jsonl", [row])
    ds = JsonlDataset(
        path,
        fields={
            "user_input": "question",
            "retrieved_contexts": "contexts",
            "reference_context_ids": "gt_ids",
            "retrieved_context_ids": "ids",
        },
    )
    [s] = load(ds)
    assert (s.user_input, s.retrieved_contexts, s.reference_context_ids) == ("q", ("a",), ("1",))


def test_unknown_mapping_key_suggests(tmp_path):
    with pytest.raises(ConfigError, match="did you mean 'user_input'"):
        JsonlDataset(tmp_path / "d.jsonl", fields={"user_inptu": "q"})


def test_csv_with_json_and_python_lists(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(
        "id,user_input,retrieved_context_ids,reference_context_ids\n"
        'a,"Q, with comma","[""d1"", ""d2""]","[\'d1\']"\n'
        'b,"multi\nline",[1],\n',
        encoding="utf-8",
    )
    a, b = load(CsvDataset(path))
    assert a.retrieved_context_ids == ("d1", "d2") and a.reference_context_ids == ("d1",)
    assert a.user_input == "Q, with comma"
    assert b.user_input == "multi\nline" and b.reference_context_ids is None


def test_bom_is_accepted(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(ROW).encode() + b"\n")
    assert len(load(JsonlDataset(path))) == 1


def test_blank_lines_are_skipped_and_ids_stay_line_indices(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(ROW) + "\n\n" + json.dumps(ROW) + "\n", encoding="utf-8")
    assert [s.id for s in load(JsonlDataset(path))] == ["0", "2"]


def test_sha256_covers_the_whole_file_even_with_limit(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [ROW, ROW, ROW])
    import hashlib

    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    ds = JsonlDataset(path)
    assert len(list(ds.samples(limit=1))) == 1
    assert ds.sha256() == expected
    load(ds)
    assert ds.sha256() == expected


def test_bundled_sample_has_every_field_for_every_variant():
    samples = load(SampleDataset())
    assert len(samples) == 30
    for s in samples:
        for f in SAMPLE_FIELDS:
            if f != "reference_context_grades":
                assert getattr(s, f), (s.id, f)


# (file bytes, expected fragments of the one-line error: file, line, field, what)
BAD_JSONL = [
    (b'{"user_input": "q"}\n{"user_input": \n', ["d.jsonl:2", "not valid JSON"]),
    (b'[1, 2]\n', ["d.jsonl:1", "expected a JSON object, got a list"]),
    (
        b'{"user_input": 3}\n',
        ["d.jsonl:1", "field 'user_input'", "expected a string, got int"],
    ),
    (
        b'{"retrieved_contexts": "one chunk"}\n',
        ["field 'retrieved_contexts'", "expected a list, got a string"],
    ),
    (b'{"retrieved_contexts": ["a", null]}\n', ["item 1", "expected a string, got NoneType"]),
    (
        b'{"retrieved_context_ids": [1.5]}\n',
        ["field 'retrieved_context_ids'", "string or integer id"],
    ),
    (b'{"retrieved_context_ids": [true]}\n', ["string or integer id, got a boolean"]),
    (b'{"retrieved_context_ids": [{"a": 1}]}\n', ["got an object"]),
    (
        b'{"id": 1}\n{"id": "1"}\n',
        ["d.jsonl:2", "field 'id'", "duplicate id '1' (first used on line 1)"],
    ),
    (b'{"id": [1]}\n', ["field 'id'", "expected a string or integer"]),
    (b'{"user_input": "caf\xe9"}\n', ["d.jsonl:1", "not valid UTF-8"]),
    (
        b'{"retrieved_contexts": ["a", "b"], "retrieved_context_ids": ["1"]}\n',
        ["field 'retrieved_context_ids'", "parallel"],
    ),
    (b'{"user_input": "q"}\n{"user_input": "trunc', ["d.jsonl:2", "not valid JSON"]),
    (
        b'{"reference_context_ids": ["a"], "reference_context_grades": [NaN]}\n',
        ["finite number"],
    ),
    (
        b'{"reference_context_ids": ["a"], "reference_context_grades": ["2"]}\n',
        ["finite number, got '2'"],
    ),
]


@pytest.mark.parametrize(("content", "fragments"), BAD_JSONL)
def test_malformed_jsonl_names_line_and_field(tmp_path, content, fragments):
    path = tmp_path / "d.jsonl"
    path.write_bytes(content)
    with pytest.raises(DatasetError) as err:
        load(JsonlDataset(path))
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_csv_unparseable_list_cell(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("retrieved_context_ids\n[oops\n", encoding="utf-8")
    with pytest.raises(
        DatasetError, match=r"d.csv:2: field 'retrieved_context_ids': expected a JSON list"
    ):
        load(CsvDataset(path))


def test_csv_wrong_column_count(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b\n1,2,3\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"d.csv:2: has 3 columns but the header has 2"):
        load(CsvDataset(path))


def test_missing_file(tmp_path):
    with pytest.raises(DatasetError, match="nope.jsonl: file not found"):
        JsonlDataset(tmp_path / "nope.jsonl").check()


def test_no_path_given():
    with pytest.raises(DatasetError, match="set dataset.path=FILE"):
        JsonlDataset(None)


def test_file_and_memory_datasets_have_no_corpus_and_grade_one(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [ROW])
    csv_path = tmp_path / "d.csv"
    for ds in (JsonlDataset(path), CsvDataset(csv_path), ParquetDataset(tmp_path / "d.parquet")):
        assert ds.source == str(ds.path) and ds.min_grade == 1.0 and ds.corpus() is None
    sample = SampleDataset()
    assert sample.source.endswith("sample_rag.jsonl") and sample.corpus() is None
    records = RecordsDataset([ROW], name="mine")
    assert (records.source, records.min_grade, records.corpus()) == ("mine", 1.0, None)
    assert records.describe() == {"format": "records", "path": "mine", "records": 1}


def test_records_from_objects():
    from dataclasses import dataclass
    from types import SimpleNamespace

    @dataclass
    class Case:  # fields read from __dict__
        input: str

    class Model:  # pydantic v2
        def model_dump(self):
            return {"user_input": "from model_dump"}

    class Row:  # pandas Series
        def to_dict(self):
            return {"user_input": "from to_dict"}

    class Legacy:  # pydantic v1
        def dict(self):
            return {"user_input": "from dict"}

    assert as_record(ROW) is ROW
    assert as_record(Case("q")) == {"input": "q"}
    assert as_record(SimpleNamespace(question="q")) == {"question": "q"}
    assert as_record(Model()) == {"user_input": "from model_dump"}
    assert as_record(Row()) == {"user_input": "from to_dict"}
    assert as_record(Legacy()) == {"user_input": "from dict"}
    ds = RecordsDataset([Case("deepeval name"), Model(), {"question": "legacy name"}])
    texts = [s.user_input for s in ds.samples()]
    assert texts == ["deepeval name", "from model_dump", "legacy name"]
