"""Field-hardening of the dataset readers (issue 12), run through the CLI (``run_cli``, in
process) and the Python API.

Every bad input ends in exit code 2 with ONE line ``error: WHERE: WHAT`` naming the file
(and line and field where known) or the setting, and leaves no outputs; never a
traceback, a hang, or a silent result. Four classes:

1. text that is valid JSON (or a Python literal) but not Unicode: a lone surrogate;
2. operating-system and format errors while reading: pipes, devices, I/O errors, files
   that change or vanish mid-run, Parquet damaged in a later row group;
3. dataset settings checked, with their range, before any work;
4. a mapped column (``dataset.fields``) that the data does not have.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, BinaryIO

import pytest
from conftest import CliResult, run_cli

from harness.api import evaluate
from harness.core.errors import ConfigError, DatasetError
from harness.datasets import reading
from harness.datasets.beir.dataset import BeirDataset
from harness.datasets.files import CsvDataset, FileDataset, JsonlDataset
from harness.datasets.memory import RecordsDataset
from harness.datasets.records import RecordParser

TINY = Path(__file__).resolve().parents[1] / "data" / "beir_tiny"
OK = {"retrieved_context_ids": ["a", "b"], "reference_context_ids": ["b"]}


def surrogate(code: str) -> str:
    """The message for a lone surrogate, ``code`` as in ``\\ud800``."""
    return f"contains a lone surrogate ({code}), which is not valid Unicode; fix the text"


def cli(tmp_path: Path, *args: str) -> CliResult:
    return run_cli(*args, "tracking=none", cwd=tmp_path, timeout=60)


def fresh(tmp_path: Path, name: str) -> Path:
    """A new working directory for a second run (each run keeps its own outputs)."""
    (tmp_path / name).mkdir()
    return tmp_path / name


def fails(result: CliResult, start: str, contains: str = "", *, outputs: bool = False) -> str:
    """Exit 2, one ``error:`` line starting with ``start``; no summary (and, unless the run
    failed mid-way, ``outputs``, no samples.jsonl either)."""
    text = result.stdout + result.stderr
    assert "Traceback" not in text, text[-3000:]
    assert result.returncode == 2, f"exit {result.returncode}: {text[-3000:]!r}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {result.stderr[-3000:]!r}"
    assert lines[0].startswith(f"error: {start}"), lines[0]
    assert contains in lines[0], lines[0]
    assert not (result.out_dir / "summary.json").exists()
    if not outputs:
        assert not (result.out_dir / "samples.jsonl").exists()
    return lines[0]


def scores(result: CliResult) -> list[dict[str, Any]]:
    text = result.stdout + result.stderr
    assert "Traceback" not in text, text[-3000:]
    assert result.returncode == 0, text[-3000:]
    return result.rows()


def jsonl(path: Path, *records: dict[str, Any]) -> Path:
    """JSON lines as ``json.dumps`` writes them: ASCII, a lone surrogate as ``\\udXXX``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="ascii")
    return path


def tiny(tmp_path: Path) -> Path:
    return Path(shutil.copytree(TINY, tmp_path / "beir"))


def append(path: Path, line: str | bytes) -> int:
    """Append one line; return its line number."""
    data = line if isinstance(line, bytes) else line.encode("ascii")
    before = path.read_bytes()
    path.write_bytes(before + data + b"\n")
    return before.count(b"\n") + 1


# ---------------------------------------------------------------- 1. lone surrogates

# (record, field named, "item N: " or "", the surrogate as written in the message)
SURROGATE_RECORDS = [
    ({**OK, "id": "\ud800"}, "id", "", "\\ud800"),
    ({**OK, "user_input": "why\udfff"}, "user_input", "", "\\udfff"),
    ({**OK, "reference": "\ud83dx"}, "reference", "", "\\ud83d"),  # high, then no low
    ({**OK, "response": "a\ude00\ud83d"}, "response", "", "\\ude00"),  # low before high
    ({**OK, "response": "end\udbff"}, "response", "", "\\udbff"),  # high at the very end
    (
        {**OK, "retrieved_contexts": ["fine", "bad\ud800"]},
        "retrieved_contexts", "item 1: ", "\\ud800",
    ),
    ({**OK, "reference_contexts": ["\udfff"]}, "reference_contexts", "item 0: ", "\\udfff"),
    (
        {"retrieved_context_ids": ["a", "\ud800"], "reference_context_ids": ["a"]},
        "retrieved_context_ids", "item 1: ", "\\ud800",
    ),
    (
        {"retrieved_context_ids": [7, "x\udc00"], "reference_context_ids": ["a"]},
        "retrieved_context_ids", "item 1: ", "\\udc00",
    ),
    (
        {"retrieved_context_ids": ["a"], "reference_context_ids": ["ok", "\udbff\udbff"]},
        "reference_context_ids", "item 1: ", "\\udbff",
    ),
]


@pytest.mark.parametrize(
    ("record", "field", "item", "code"),
    SURROGATE_RECORDS,
    ids=[f"{c[1]}-{i}" for i, c in enumerate(SURROGATE_RECORDS)],
)
def test_jsonl_lone_surrogate_is_refused_with_file_line_field(
    tmp_path: Path, record: dict[str, Any], field: str, item: str, code: str
) -> None:
    path = jsonl(tmp_path / "d.jsonl", OK, record)
    result = cli(tmp_path, "dataset=jsonl", f"dataset.path={path}")
    fails(result, f"{path}:2: field '{field}': {item}{surrogate(code)}")


def test_jsonl_surrogate_after_blank_lines_and_first_batch(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    good = json.dumps(OK)
    bad = json.dumps({**OK, "user_input": "\ud800"})
    path.write_text(f"{good}\n\n{good}\n{good}\n{good}\n{bad}\n", encoding="ascii")
    result = cli(tmp_path, "dataset=jsonl", f"dataset.path={path}", "run.batch_size=2")
    fails(result, f"{path}:6: field 'user_input': {surrogate(chr(92) + 'ud800')}",
          outputs=True)


def test_surrogate_in_a_mapped_column_names_the_users_column(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "d.jsonl", {**OK, "question": "q\ud800"})
    result = cli(tmp_path, "dataset=jsonl", f"dataset.path={path}",
                 "dataset.fields.user_input=question")
    fails(result, f"{path}:1: field 'question': {surrogate(chr(92) + 'ud800')}")


def test_valid_surrogate_pairs_and_unread_keys_score(tmp_path: Path) -> None:
    # "\ud83d\ude00" is one character (U+1F600) in JSON; keys no field reads are not checked
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "\\ud83d\\ude00", "user_input": "smile \\ud83d\\ude00", '
        '"retrieved_context_ids": ["a", "b"], "reference_context_ids": ["b"], '
        '"notes": "\\ud800"}\n',
        encoding="ascii",
    )
    rows = scores(cli(tmp_path, "dataset=jsonl", f"dataset.path={path}"))
    assert [(r["id"], r["score"]) for r in rows] == [("\U0001f600", 0.5)]  # 1 of 2 relevant


CSV_HEADER = "id,user_input,retrieved_context_ids,reference_context_ids,reference_contexts\n"


@pytest.mark.parametrize(
    ("row", "field", "item", "code"),
    [
        ('q1,q,"[""a"", ""\\ud800""]","[""a""]",', "retrieved_context_ids", "item 1: ",
         "\\ud800"),
        ("q1,q,\"['a']\",\"['\\udfff']\",", "reference_context_ids", "item 0: ", "\\udfff"),
        ('q1,q,"[""a""]","[""a""]","[""ok"", ""\\ud83dx""]"', "reference_contexts",
         "item 1: ", "\\ud83d"),
    ],
    ids=["json-list-cell", "python-literal-cell", "text-list-cell"],
)
def test_csv_list_cells_with_a_lone_surrogate_are_refused(
    tmp_path: Path, row: str, field: str, item: str, code: str
) -> None:
    path = tmp_path / "d.csv"
    path.write_text(CSV_HEADER + 'q0,q,"[""a""]","[""a""]",\n' + row + "\n", encoding="ascii")
    result = cli(tmp_path, "dataset=csv", f"dataset.path={path}")
    fails(result, f"{path}:3: field '{field}': {item}{surrogate(code)}")


def test_csv_text_cells_are_text_and_encoded_surrogates_are_not_utf8(tmp_path: Path) -> None:
    # a text cell is not JSON: "\ud800" in it is six characters, kept as they are
    path = tmp_path / "d.csv"
    path.write_text(CSV_HEADER + 'q1,\\ud800,"[""a""]","[""a""]",\n', encoding="ascii")
    assert [r["score"] for r in scores(cli(tmp_path, "dataset=csv", f"dataset.path={path}"))] \
        == [1.0]
    # a surrogate encoded as bytes (CESU-8: ED A0 80) is not UTF-8
    bad = tmp_path / "bad.csv"
    bad.write_bytes(CSV_HEADER.encode() + b'q1,x\xed\xa0\x80,"[""a""]","[""a""]",\n')
    fails(cli(tmp_path, "dataset=csv", f"dataset.path={bad}"), f"{bad}:2: not valid UTF-8")


def test_jsonl_encoded_surrogate_bytes_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(json.dumps(OK).encode() + b'\n{"user_input": "\xed\xb0\x80"}\n')
    fails(cli(tmp_path, "dataset=jsonl", f"dataset.path={path}"), f"{path}:2: not valid UTF-8")


def _bad_utf8_strings(values: list[bytes]) -> Any:
    """An Arrow string array holding ``values`` unchecked (as a buggy writer might)."""
    import pyarrow as pa

    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    return pa.Array.from_buffers(
        pa.string(), len(values),
        [None, pa.array(offsets, pa.int32()).buffers()[1], pa.py_buffer(b"".join(values))],
    )


def test_parquet_cannot_hold_a_surrogate_and_bad_utf8_is_named(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Arrow strings are UTF-8: a lone surrogate cannot even be put into one
    with pytest.raises(UnicodeEncodeError):
        pa.array(["\ud800"])
    # bytes that are not UTF-8 (an encoded surrogate) in a text column ...
    text = tmp_path / "text.parquet"
    pq.write_table(pa.table({
        "user_input": _bad_utf8_strings([b"ok", b"q\xed\xa0\x80"]),
        "retrieved_context_ids": [["a"], ["a"]],
        "reference_context_ids": [["a"], ["a"]],
    }), text)
    fails(cli(tmp_path, "dataset=parquet", f"dataset.path={text}"),
          f"{text}:2: field 'user_input': not valid UTF-8")
    # ... and in an item of a list column
    items = tmp_path / "items.parquet"
    ids = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()),
                                   _bad_utf8_strings([b"a", b"b", b"\xed\xbf\xbf"]))
    pq.write_table(pa.table({"retrieved_context_ids": [["a"], ["b"]],
                             "reference_context_ids": ids}), items)
    fails(cli(tmp_path, "dataset=parquet", f"dataset.path={items}"),
          f"{items}:2: field 'reference_context_ids': not valid UTF-8")


@pytest.mark.parametrize(
    ("file", "record", "field", "code"),
    [
        ("corpus.jsonl", {"_id": "d9\ud800", "text": "t"}, "_id", "\\ud800"),
        ("corpus.jsonl", {"_id": "d9", "title": "\udfff", "text": "t"}, "title", "\\udfff"),
        ("corpus.jsonl", {"_id": "d9", "title": "t", "text": "x\ud83d"}, "text", "\\ud83d"),
        ("queries.jsonl", {"_id": "\ude00", "text": "q"}, "_id", "\\ude00"),
        ("queries.jsonl", {"_id": "q7", "text": "why\ud800?"}, "text", "\\ud800"),
        ("answers.jsonl", {"query_id": "q\udbff", "answer": "a"}, "query_id", "\\udbff"),
        ("answers.jsonl", {"query_id": "q1", "answer": "\udc00"}, "answer", "\\udc00"),
    ],
    ids=["corpus-id", "corpus-title", "corpus-text", "query-id", "query-text",
         "answer-query-id", "answer"],
)
def test_beir_lone_surrogates_are_refused(
    tmp_path: Path, file: str, record: dict[str, str], field: str, code: str
) -> None:
    folder = tiny(tmp_path)
    line = append(folder / file, json.dumps(record))
    result = cli(tmp_path, "dataset=beir", f"dataset.path={folder}",
                 f"dataset.answers={folder / 'answers.jsonl'}", "retriever=precomputed")
    fails(result, f"{folder / file}:{line}: field '{field}': {surrogate(code)}")


def test_beir_qrels_are_utf8_text_so_a_surrogate_is_bad_bytes(tmp_path: Path) -> None:
    folder = tiny(tmp_path)
    qrels = folder / "qrels" / "test.tsv"
    line = append(qrels, b"q1\td\xed\xa0\x80\t1")
    result = cli(tmp_path, "dataset=beir", f"dataset.path={folder}", "retriever=precomputed")
    fails(result, f"{qrels}:{line}: not valid UTF-8")


@pytest.mark.parametrize(
    ("records", "fields", "message"),
    [
        ([OK, {**OK, "id": "\ud800"}], None, "records:2: field 'id': "),
        ([{**OK, "user_input": "\udfff"}], None, "records:1: field 'user_input': "),
        ([OK, OK, {**OK, "retrieved_contexts": ["a", "\ud800"]}], None,
         "records:3: field 'retrieved_contexts': item 1: "),
        ([{**OK, "reference_context_ids": ["\ud800"]}], None,
         "records:1: field 'reference_context_ids': item 0: "),
        ([{**OK, "q": "\ud800"}], {"user_input": "q"}, "records:1: field 'q': "),
        ([SimpleNamespace(**OK, reference="\ud800")], None, "records:1: field 'reference': "),
    ],
    ids=["id", "user_input", "retrieved-item", "reference-id", "mapped", "object"],
)
def test_api_records_with_a_lone_surrogate_raise_dataset_error(
    records: list[Any], fields: dict[str, str] | None, message: str
) -> None:
    with pytest.raises(DatasetError) as err:
        evaluate(records, "id_based", fields=fields)
    assert str(err.value).startswith(message) and "contains a lone surrogate" in str(err.value)


def test_api_unread_surrogates_odd_keys_and_long_ids() -> None:
    odd = {**OK, "notes": "\ud800", 5: "int key", ("t",): "tuple key"}
    assert evaluate([odd, {**OK, "\udfff": 1}], "id_based").scores == [0.5, 0.5]
    with pytest.raises(DatasetError, match=r"records:1: field 'id': integer id too long"):
        evaluate([{**OK, "id": 10**5000}], "id_based")
    with pytest.raises(DatasetError, match=r"field 'reference_context_ids': item 1: integer id"):
        evaluate([{**OK, "reference_context_ids": ["a", 10**5000]}], "id_based")


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        ([OK, None], r"^records:2: expected a dict or an object with fields, got NoneType$"),
        ([OK, "text"], r"^records:2: expected a dict or an object with fields, got str$"),
        ("abc", r"^records: expected a list of records .*got str$"),
        (OK, r"^records: expected a list of records .*got dict$"),
        (5, r"^records: expected a list of records .*got int$"),
    ],
    ids=["none", "string-record", "string", "one-dict", "number"],
)
def test_api_samples_that_are_not_records(samples: Any, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        evaluate(samples, "id_based")


def test_api_dataframe_gets_a_hint() -> None:
    pd = pytest.importorskip("pandas")
    with pytest.raises(DatasetError, match=r"pass df.to_dict\('records'\)"):
        evaluate(pd.DataFrame([OK]), "id_based")
    assert evaluate(pd.DataFrame([OK]).to_dict("records"), "id_based").scores == [0.5]


# ------------------------------------------------- 2. operating-system and format errors


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path, fmt: str) -> None:
    fifo = tmp_path / f"d.{fmt}"
    os.mkfifo(fifo)  # nobody ever writes: opening it to read would block forever
    result = cli(tmp_path, f"dataset={fmt}", f"dataset.path={fifo}")
    fails(result, f"{fifo}: is a named pipe (FIFO), not a regular file")


def test_named_pipe_in_a_beir_folder(tmp_path: Path) -> None:
    folder = tiny(tmp_path)
    (folder / "queries.jsonl").unlink()
    os.mkfifo(folder / "queries.jsonl")
    result = cli(tmp_path, "dataset=beir", f"dataset.path={folder}", "retriever=precomputed")
    fails(result, f"{folder / 'queries.jsonl'}: is a named pipe (FIFO)")


def test_pipe_swapped_in_after_the_check_does_not_hang(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "d.jsonl", OK)
    ds = JsonlDataset(path)
    ds.check()
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(DatasetError, match=r"is a named pipe \(FIFO\)"):
        list(ds.samples())
    with pytest.raises(DatasetError, match=r"is a named pipe \(FIFO\)"):
        ds.sha256()
    assert ds.estimate_count() == 0  # for progress only: the read says what is wrong


def test_character_device_is_refused(tmp_path: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    result = cli(tmp_path, "dataset=jsonl", "dataset.path=/dev/zero")  # endless zeros
    fails(result, "/dev/zero: is a character device, not a regular file")


def test_real_io_error_is_one_line(tmp_path: Path) -> None:
    mem = Path("/proc/self/mem")  # a regular file whose first read fails with EIO
    try:
        with open(mem, "rb") as f:
            f.read(1)
    except OSError as e:
        if e.errno != errno.EIO:
            pytest.skip(f"/proc/self/mem fails with {e}")
    else:
        pytest.skip("/proc/self/mem is readable here")
    result = cli(tmp_path, "dataset=jsonl", f"dataset.path={mem}")
    fails(result, f"{mem}:1: reading failed (Input/output error)")


class FailingFile:
    """A real open file whose read number ``fail_at`` (1-based) fails with EIO."""

    def __init__(self, f: BinaryIO, fail_at: int) -> None:
        self._f, self._fail_at, self._reads = f, fail_at, 0

    def read(self, size: int = -1) -> bytes:
        self._reads += 1
        if self._reads >= self._fail_at:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return self._f.read(size)

    def fileno(self) -> int:
        return self._f.fileno()

    def __enter__(self) -> FailingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()


def fail_reads(
    monkeypatch: pytest.MonkeyPatch, name: str, fail_at: int, block: int = 64
) -> Callable[[Path], int]:
    """Make reads of files called ``name`` fail at read ``fail_at``, in blocks of
    ``block`` bytes; returns the line being read when that happens."""
    opener = reading.open_regular

    def failing(path: Path) -> Any:
        f = opener(path)
        return FailingFile(f, fail_at) if Path(path).name == name else f

    monkeypatch.setattr(reading, "BLOCK", block)
    monkeypatch.setattr(reading, "open_regular", failing)
    return lambda path: path.read_bytes()[: block * (fail_at - 1)].count(b"\n") + 1


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_read_error_mid_file_names_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    if fmt == "jsonl":
        path = jsonl(tmp_path / "d.jsonl", *[{**OK, "id": f"q{i}"} for i in range(40)])
    else:
        path = tmp_path / "d.csv"
        path.write_text("id,retrieved_context_ids,reference_context_ids\n" + "".join(
            f'q{i},"[""a"", ""b""]","[""b""]"\n' for i in range(40)), encoding="ascii")
    line = fail_reads(monkeypatch, path.name, fail_at=8)(path)
    assert line > 3
    result = cli(tmp_path, f"dataset={fmt}", f"dataset.path={path}", "run.batch_size=1")
    fails(result, f"{path}:{line}: reading failed (Input/output error)", outputs=True)


def test_read_error_in_a_beir_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tiny(tmp_path)
    line = fail_reads(monkeypatch, "corpus.jsonl", fail_at=3)(folder / "corpus.jsonl")
    result = cli(tmp_path, "dataset=beir", f"dataset.path={folder}", "retriever=precomputed")
    fails(result, f"{folder / 'corpus.jsonl'}:{line}: reading failed (Input/output error)")
    ds = BeirDataset(folder)
    with pytest.raises(DatasetError, match=r"corpus\.jsonl: reading failed"):
        ds.sha256()


def after_check(monkeypatch: pytest.MonkeyPatch, action: Callable[[Path], None]) -> None:
    """Run ``action(path)`` right after the dataset's ``check`` passed (before any read)."""
    original = FileDataset.check

    def check(self: FileDataset) -> None:
        original(self)
        action(self.path)

    monkeypatch.setattr(FileDataset, "check", check)


def after_first_record(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> None:
    """Run ``action()`` once, right after the first record was parsed (mid-run)."""
    original = RecordParser.parse
    done: list[bool] = []

    def parse(self: RecordParser, raw: Any, index: int, line: int) -> Any:
        sample = original(self, raw, index, line)
        if not done:
            done.append(True)
            action()
        return sample

    monkeypatch.setattr(RecordParser, "parse", parse)


def test_file_replaced_by_a_directory_after_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = jsonl(tmp_path / "d.jsonl", OK)

    def swap(p: Path) -> None:
        p.unlink()
        p.mkdir()

    after_check(monkeypatch, swap)
    fails(cli(tmp_path, "dataset=jsonl", f"dataset.path={path}"),
          f"{path}: is a directory, not a file")


def test_file_removed_after_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "d.csv"
    path.write_text('retrieved_context_ids,reference_context_ids\n"[""a""]","[""a""]"\n')
    after_check(monkeypatch, lambda p: p.unlink())
    fails(cli(tmp_path, "dataset=csv", f"dataset.path={path}"), f"{path}: file not found")


def test_file_that_cannot_be_opened_after_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a UNIX socket in the file's place: open() fails for every user, root included
    path = jsonl(tmp_path / "d.jsonl", OK)

    def socket_in_its_place(p: Path) -> None:
        p.unlink()
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(p))

    after_check(monkeypatch, socket_in_its_place)
    fails(cli(tmp_path, "dataset=jsonl", f"dataset.path={path}"),
          f"{path}: cannot open (No such device or address)")
    if os.geteuid() != 0:  # a file made unreadable (root reads any file)
        path = jsonl(tmp_path / "e.jsonl", OK)
        monkeypatch.undo()
        after_check(monkeypatch, lambda p: p.chmod(0))
        fails(cli(fresh(tmp_path, "e"), "dataset=jsonl", f"dataset.path={path}"),
              f"{path}: cannot open (Permission denied)")


def test_file_removed_mid_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [{**OK, "id": f"q{i}"} for i in range(3)]
    # read to the end through the open file: the result is complete and correct
    path = jsonl(tmp_path / "d.jsonl", *records)
    after_first_record(monkeypatch, path.unlink)
    assert [r["score"] for r in scores(cli(tmp_path, "dataset=jsonl",
                                           f"dataset.path={path}"))] == [0.5] * 3
    # with run.limit the hash needs the file again: it is gone, and the error says so
    path = jsonl(tmp_path / "e.jsonl", *records)
    monkeypatch.undo()
    after_first_record(monkeypatch, path.unlink)
    result = cli(fresh(tmp_path, "e"), "dataset=jsonl", f"dataset.path={path}", "run.limit=1")
    fails(result, f"{path}: file not found", outputs=True)


def test_file_growing_while_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = jsonl(tmp_path / "d.jsonl", OK, OK)

    def grow() -> None:
        with open(path, "a", encoding="ascii") as f:
            f.write(json.dumps(OK) + "\n")

    after_first_record(monkeypatch, grow)
    fails(cli(tmp_path, "dataset=jsonl", f"dataset.path={path}"),
          f"{path}: changed while the run read it (its size went from", outputs=True)


def test_file_replaced_before_its_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = jsonl(tmp_path / "d.jsonl", *[{**OK, "id": f"q{i}"} for i in range(3)])
    other = jsonl(tmp_path / "other.jsonl", *[{**OK, "id": f"x{i}"} for i in range(3)])
    after_first_record(monkeypatch, lambda: os.replace(other, path))  # an editor's save
    result = cli(tmp_path, "dataset=jsonl", f"dataset.path={path}", "run.limit=2")
    fails(result, f"{path}: changed while the run read it", outputs=True)


def _parquet(path: Path, rows: int, group: int, compression: str = "NONE") -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "id": [f"q{i}" for i in range(rows)],
        "retrieved_context_ids": [[f"a{i}", "b"] for i in range(rows)],
        "reference_context_ids": [["b"]] * rows,
    })
    pq.write_table(table, path, row_group_size=group, compression=compression)
    return pq.ParquetFile(path).metadata


def _chunk(metadata: Any, group: int, column: int) -> tuple[int, int]:
    """Where the bytes of one column chunk of one row group start, and how many there are."""
    col = metadata.row_group(group).column(column)
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    return start, col.total_compressed_size


@pytest.mark.parametrize(
    ("compression", "where"), [("NONE", "header"), ("SNAPPY", "middle")],
    ids=["page-header", "compressed-data"],
)
def test_parquet_damaged_in_a_later_row_group(
    tmp_path: Path, compression: str, where: str
) -> None:
    path = tmp_path / "d.parquet"
    metadata = _parquet(path, 12_000, 1_000, compression)
    start, size = _chunk(metadata, 9, 1)  # the 10th row group: rows 9,001 to 10,000
    at = start if where == "header" else start + size // 2
    data = bytearray(path.read_bytes())
    data[at : at + 40] = bytes(b ^ 0x5A for b in data[at : at + 40])
    path.write_bytes(bytes(data))
    result = cli(tmp_path, "dataset=parquet", f"dataset.path={path}", "run.batch_size=500")
    fails(result, f"{path}:9001: cannot read the rows from here on, in row group 10 of 12",
          outputs=True)


def test_parquet_truncated_or_not_parquet(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    _parquet(path, 3_000, 1_000)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    fails(cli(tmp_path, "dataset=parquet", f"dataset.path={path}"),
          f"{path}: not a readable Parquet file")


def test_parquet_many_row_groups_score_in_order(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    _parquet(path, 2_500, 1_000)
    rows = scores(cli(tmp_path, "dataset=parquet", f"dataset.path={path}", "run.limit=2100"))
    # a{i} is not a reference id, b is: precision 1/2 for each (ragas id-based)
    assert [r["id"] for r in rows] == [f"q{i}" for i in range(2100)]
    assert {r["score"] for r in rows} == {0.5}


# ----------------------------------------------------- 3. settings checked before work


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (("dataset=csv", "dataset.delimiter=ab"), "dataset.delimiter: expected one character"),
        (("dataset=csv", "dataset.delimiter=''"), "dataset.delimiter: expected one character"),
        (("dataset=csv", "dataset.delimiter='\"'"), "dataset.delimiter: expected one character"),
        (("dataset=csv", "dataset.delimiter='\\n'"), "dataset.delimiter: expected one char"),
        (("dataset=csv", "dataset.delimiter=1"), "dataset.delimiter: expected"),
        (("dataset=csv", "+dataset.quotechar=x"), "dataset.quotechar: unknown setting"),
        (("dataset=jsonl", "+dataset.encoding=latin-1"), "dataset.encoding: unknown setting"),
        (("dataset=jsonl", "+dataset.fields.nope=x"), "dataset.fields: unknown field 'nope'"),
        (("dataset=jsonl", "+dataset.fields.user_inptu=q"),
         "dataset.fields: unknown field 'user_inptu' (did you mean 'user_input'?)"),
        (("dataset=jsonl", "dataset.fields.user_input=5"),
         "dataset.fields.user_input: expected a column name, got 5"),
        (("dataset=jsonl", "dataset.fields.user_input=''"),
         "dataset.fields.user_input: expected a column name, got ''"),
        (("dataset=jsonl", "dataset.fields.user_input=[a,b]"),
         "dataset.fields.user_input: expected a column name, got ['a', 'b']"),
        (("dataset=jsonl", "dataset.fields.reference=true"),
         "dataset.fields.reference: expected a column name, got True"),
        (("dataset=jsonl", "dataset.fields=abc"), "dataset.fields: expected"),
        (("dataset=jsonl", "dataset.path='~no_such_user_here/d.jsonl'"),
         "dataset.path: cannot expand '~no_such_user_here/d.jsonl'"),
        (("dataset=parquet", "+dataset.delimiter='|'"), "dataset.delimiter: unknown setting"),
        (("dataset=beir", "dataset.split=''"), "dataset.split: expected a split name"),
        (("dataset=beir", "dataset.split=' '"), "dataset.split: expected a split name"),
        (("dataset=beir", "dataset.split=a/b"), "dataset.split: expected a split name"),
        (("dataset=beir", "dataset.split=5"), "dataset.split: expected"),
        (("dataset=beir", "dataset.limit=-1"), "dataset.limit: expected"),
        (("dataset=beir", "dataset.limit=nan"), "dataset.limit: expected"),
        (("dataset=beir", "dataset.limit=1.5"), "dataset.limit: expected"),
        (("dataset=beir", "dataset.limit=true"), "dataset.limit: expected"),
        (("dataset=beir", "dataset.corpus_limit=-3"), "dataset.corpus_limit: expected"),
        (("dataset=beir", "dataset.corpus_limit=inf"), "dataset.corpus_limit: expected"),
        (("dataset=beir", "dataset.min_grade=nan"), "dataset.min_grade: expected"),
        (("dataset=beir", "dataset.min_grade=inf"), "dataset.min_grade: expected"),
        (("dataset=beir", "dataset.min_grade=-inf"), "dataset.min_grade: expected"),
        (("dataset=beir", "dataset.min_grade=high"), "dataset.min_grade: expected"),
        (("dataset=beir", "dataset.answers=5"), "dataset.answers: expected"),
        (("dataset=beir", "dataset.answers='~no_such_user_here/a.jsonl'"),
         "dataset.answers: cannot expand"),
        (("dataset=sample", "+dataset.path=x"), "dataset.path: unknown setting"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, tuple) else None,
)
def test_bad_dataset_setting_stops_before_any_work(
    tmp_path: Path, args: tuple[str, ...], start: str
) -> None:
    data = jsonl(tmp_path / "d.jsonl", OK)
    folder = tiny(tmp_path)
    path = folder if args[0] == "dataset=beir" else data
    with_path = () if args[0] == "dataset=sample" or "dataset.path=" in " ".join(args) \
        else (f"dataset.path={path}",)
    result = cli(tmp_path, *with_path, *args)
    line = fails(result, start)
    assert " got " in line or "unknown" in line or "cannot expand" in line, line
    assert not list(result.out_dir.glob("*.jsonl"))


@pytest.mark.slow
def test_delimiter_tab_and_others_work(tmp_path: Path) -> None:
    for name, sep, arg in [("t.tsv", "\t", "dataset.delimiter=\\t"),
                           ("s.csv", ";", "dataset.delimiter=';'"),
                           ("p.csv", "|", "dataset.delimiter='|'")]:
        path = tmp_path / name
        path.write_text(sep.join(["id", "retrieved_context_ids", "reference_context_ids"])
                        + "\n" + sep.join(["q1", '["a", "b"]', '["b"]']) + "\n")
        rows = scores(cli(fresh(tmp_path, path.stem), "dataset=csv", f"dataset.path={path}",
                          arg))
        assert [(r["id"], r["score"]) for r in rows] == [("q1", 0.5)], name


def test_settings_are_checked_by_the_constructors_too(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "d.jsonl", OK)
    bad: list[tuple[Callable[[], object], str]] = [
        (lambda: CsvDataset(path, delimiter="ab"), "dataset.delimiter: expected one character"),
        (lambda: CsvDataset(path, delimiter=None), "dataset.delimiter"),  # type: ignore[arg-type]
        (lambda: JsonlDataset("a\x00b"), "dataset.path: expected a file path"),
        (lambda: JsonlDataset(5), "dataset.path: expected a file path, got 5"),  # type: ignore[arg-type]
        (lambda: JsonlDataset("d\udcff.jsonl"), "dataset.path: the path 'd\\udcff.jsonl'"),
        (lambda: JsonlDataset(path, fields=["user_input"]),  # type: ignore[arg-type]
         "dataset.fields: expected a mapping"),
        (lambda: JsonlDataset(path, fields={1: "x"}),  # type: ignore[dict-item]
         "dataset.fields: unknown field 1"),
        (lambda: JsonlDataset(path, fields={"user_input": "q\ud800"}),
         "dataset.fields.user_input: the column name contains a lone surrogate"),
        (lambda: BeirDataset(TINY, split="te\x00st"), "dataset.split: expected"),
        (lambda: BeirDataset(TINY, min_grade=float("nan")), "dataset.min_grade: expected"),
        (lambda: BeirDataset(TINY, limit=True), "dataset.limit: expected"),
        (lambda: BeirDataset(TINY, corpus_limit=2.0), "dataset.corpus_limit: expected"),  # type: ignore[arg-type]
        (lambda: BeirDataset(TINY, answers="a\x00"), "dataset.answers: expected a file path"),
        (lambda: BeirDataset("~no_such_user_here/x"), "dataset.path: cannot expand"),
        (lambda: RecordsDataset([OK], name=""), "name: expected a non-empty string"),
    ]
    for make, message in bad:
        with pytest.raises(ConfigError) as err:
            make()
        assert str(err.value).startswith(message), (message, str(err.value))


@pytest.mark.slow
def test_paths_that_are_not_files(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").mkdir()
    fails(cli(tmp_path, "dataset=jsonl", f"dataset.path={tmp_path / 'd.jsonl'}"),
          f"{tmp_path / 'd.jsonl'}: is a directory, not a file")
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    fails(cli(tmp_path, "dataset=jsonl", f"dataset.path={loop}"), f"{loop}: cannot open (")
    long = tmp_path / ("x" * 300 + ".jsonl")  # over NAME_MAX
    fails(cli(tmp_path, "dataset=jsonl", f"dataset.path={long}"), f"{long}: cannot open (")
    fails(cli(fresh(tmp_path, "dev"), "dataset=beir", "dataset.path=/dev/null"),
          "/dev/null: is a character device, not a BEIR folder")
    folder = tiny(tmp_path)
    (folder / "corpus.jsonl").unlink()
    (folder / "corpus.jsonl").mkdir()
    fails(cli(tmp_path, "dataset=beir", f"dataset.path={folder}", "retriever=precomputed"),
          f"{folder / 'corpus.jsonl'}: is a directory, not a file")


# ------------------------------------------------------------ 4. mapped columns missing


def test_jsonl_mapped_column_in_no_record_names_the_mapping(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "d.jsonl", {"retrieved_context_ids": ["a"], "ref_ids": ["a"]},
                 {"retrieved_context_ids": ["b"], "ref_ids": ["a"]})
    result = cli(tmp_path, "dataset=jsonl", f"dataset.path={path}",
                 "dataset.fields.reference_context_ids=ref_idz")
    fails(result, f"{path}: column 'ref_idz' (mapped by dataset.fields.reference_context_ids)"
          " is in no record (2 read) (did you mean 'ref_ids'?)", outputs=True)


def test_jsonl_mapping_checked_over_the_records_read(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "d.jsonl", OK, OK, {**OK, "late": ["b"]})
    result = cli(tmp_path, "dataset=jsonl", f"dataset.path={path}",
                 "dataset.fields.reference_context_ids=late", "run.limit=2")
    fails(result, f"{path}: column 'late' (mapped by dataset.fields.reference_context_ids) "
          "is in no record (2 read)", outputs=True)
    # present in some records only: those lacking it are unscored with the reason (two of
    # three: past the default run.max_unscored_frac, accepted here to read the rows)
    rows = scores(cli(fresh(tmp_path, "all"), "dataset=jsonl", f"dataset.path={path}",
                      "dataset.fields.reference_context_ids=late", "run.max_unscored_frac=1"))
    assert [r["score"] for r in rows] == [None, None, 0.5]
    assert rows[0]["error"] == "missing field reference_context_ids"


def test_csv_mapped_column_not_in_the_header(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('qid,retrieved_context_ids,reference_context_ids\nq1,"[""a""]","[""a""]"\n')
    result = cli(tmp_path, "dataset=csv", f"dataset.path={path}", "dataset.fields.id=query_id")
    fails(result, f"{path}:1: column 'query_id' (mapped by dataset.fields.id) is not in the "
          "header", "the columns are qid, reference_context_ids, retrieved_context_ids")


def test_parquet_mapped_column_not_in_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    _parquet(path, 10, 10)
    result = cli(tmp_path, "dataset=parquet", f"dataset.path={path}",
                 "dataset.fields.retrieved_contexts=chunks")
    fails(result, f"{path}: column 'chunks' (mapped by dataset.fields.retrieved_contexts) is "
          "not a column of the file")


def test_api_mapped_key_in_no_record() -> None:
    with pytest.raises(DatasetError, match=(
        r"^records: column 'refs' \(mapped by fields\['reference_context_ids'\]\) is in no "
        r"record \(did you mean 'ref'\?\)"
    )):
        evaluate([{"retrieved_context_ids": ["a"], "ref": ["a"]}], "id_based",
                 fields={"reference_context_ids": "refs"})
    result = evaluate([{"retrieved_context_ids": ["a", "b"], "ref": ["b"]}], "id_based",
                      fields={"reference_context_ids": "ref"})
    assert result.scores == [0.5]
