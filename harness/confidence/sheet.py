"""Which samples to label: a seeded uniform draw from a finished run, and the labelling
sheet (CSV and JSON lines) that ``run.human_labels`` reads back as it is.

The sheet has one row per retrieved chunk of each drawn sample: ``id``, ``rank``,
``context_id``, ``question``, ``reference``, ``context`` (the chunk's text as the run's
``samples.jsonl`` holds it: whole when the run had ``run.row_text_chars=null``, else cut
with ``…``, and ``text_cut`` says so), and an empty ``relevant`` column. The judge's
verdicts are left out on purpose: a labeller who sees them leans on them. ``draw.json``
beside the sheet records the seed and the drawn ids.

The CSV is safe to open in a spreadsheet: a cell that would run as a formula gets a leading
``'`` (``labels.escape_cell``; the reader drops it again); the JSON lines keep the data as
it is. The three files are written whole or not at all, never through a symbolic link and
never over a file that is there: each is written under a name of its own first, then
linked to its name, which fails when anything holds that name. Processes writing into one
folder at once leave one whole sheet; the others are refused naming the file, and none
removes a file it did not make.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import io
import json
import os
import random
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.confidence.labels import escape_cell
from harness.confidence.ppi import NOT_DRAWN
from harness.core.errors import ConfigError, DatasetError, closest
from harness.datasets.reading import decode_line, load_json, read_lines, stat_file

CUT = "…"
COLUMNS = ("id", "rank", "context_id", "question", "reference", "context", "text_cut",
           "relevant")
SHEET_CSV, SHEET_JSONL, DRAW = "labels.csv", "labels.jsonl", "draw.json"
#: The sheet's files by kind, in the order they are linked into place (the CSV first: the
#: process that links it owns the sheet).
FILES = {"csv": SHEET_CSV, "jsonl": SHEET_JSONL, "draw": DRAW}
_BREAKS = {c: f"\\u{c:04x}" for c in (0x85, 0x2028, 0x2029)}
#: Create only: never an existing file, never through a symbolic link.
_NEW = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
#: Where a file system has no hard links, a file is created in place instead.
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS}


@dataclass
class Sheet:
    """A drawn sheet before it is written: its rows and the draw's record (``draw.json``)."""

    lines: list[dict[str, Any]]
    record: dict[str, Any]


def run_rows(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of a finished run's ``samples.jsonl``."""
    path = Path(run_dir) / "samples.jsonl"
    if not stat_file(path):
        partial = path.with_name(path.name + ".partial")
        why = (" (the run did not finish: only samples.jsonl.partial is there)"
               if partial.exists() else "; name the folder of a finished run")
        raise DatasetError(str(path), f"file not found{why}")
    for number, raw in read_lines(path):
        text = decode_line(raw, path, number)
        if text.strip():
            row = load_json(text, path, number)
            if not isinstance(row, dict) or "id" not in row:
                raise DatasetError(str(path), "expected a row object with an id",
                                   line=number, field="id")
            yield row


def draw(ids: Sequence[str], n: int, seed: int) -> list[str]:
    """A seeded uniform draw of ``n`` of ``ids`` without replacement (``random.Random``)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"label: expected a number of samples from 1, got {n!r}")
    if n > len(ids):
        raise ConfigError(f"label: {n} samples asked for, but the run has {len(ids)} "
                          "samples with retrieved chunks; ask for at most that many")
    return random.Random(seed).sample(list(ids), n)


def sheet_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The sheet's rows for one run row: one per retrieved chunk, rank 1 first."""
    chunks: list[Any] = row["chunks"] if isinstance(row.get("chunks"), list) else [
        {"id": i} for i in row.get("retrieved_context_ids") or []
    ]
    out = []
    for rank, chunk in enumerate(chunks, start=1):
        chunk = chunk if isinstance(chunk, dict) else {}
        text = chunk.get("text")
        out.append({
            "id": str(row["id"]), "rank": rank, "context_id": chunk.get("id"),
            "question": row.get("question"), "reference": row.get("reference"),
            "context": text, "text_cut": int(isinstance(text, str) and text.endswith(CUT)),
            "relevant": None,
        })
    return out


def draw_sheet(run_dir: str | Path, n: int, seed: int,
               rows: Sequence[dict[str, Any]] | None = None,
               carried: Mapping[str, Sequence[int]] | None = None,
               by: str | None = None, counts: Mapping[str, int] | None = None) -> Sheet:
    """Draw ``n`` samples of the finished run in ``run_dir`` with ``seed``: the sheet's rows
    and the draw's record (seed, drawn ids, the run and its rows' sha256). ``rows``: the
    run's rows when the caller has read them already.

    ``carried``: samples labelled so far, by id, with their human verdicts (rank order):
    they are not drawn again, and the sheet holds them first, filled in, so that it is the
    one labels file of the next run; ``draw.json`` names them (``carried``) and counts them
    among the drawn (a uniform draw from the rest added to a uniform draw is one).

    ``by``: the run's ``run.strata`` column: the draw is uniform within each value of it,
    ``n`` shared among them by ``plan.allocate`` (or as ``counts`` says: a plan's);
    ``draw.json`` records the counts."""
    rows_by_id = {str(r["id"]): r for r in (run_rows(run_dir) if rows is None else rows)}
    kept = dict(carried or {})
    eligible = [k for k, r in rows_by_id.items() if sheet_rows(r) and k not in kept]
    by_value: dict[str, dict[str, int]] = {}
    if by is None:
        drawn = draw(eligible, n, seed)
    else:
        drawn, by_value = _draw_by(rows_by_id, eligible, n, seed, by, run_dir, counts)
    chosen = set(drawn)
    lines = []
    for k, verdicts in kept.items():
        filled = sheet_rows(rows_by_id[k])
        for line, verdict in zip(filled, verdicts, strict=True):
            line["relevant"] = verdict
        lines += filled
    lines += [s for k, r in rows_by_id.items() if k in chosen for s in sheet_rows(r)]
    rows_file = Path(run_dir) / "samples.jsonl"
    record: dict[str, Any] = {
        "seed": seed, "n": n + len(kept), "population": len(eligible) + len(kept),
        "drawn": [*kept, *drawn],
        "run": str(Path(run_dir).resolve()),
        "samples_sha256": hashlib.sha256(rows_file.read_bytes()).hexdigest(),
        "chunks": len(lines), "texts_cut": sum(line["text_cut"] for line in lines),
    }
    if kept:
        record["carried"] = list(kept)
    if by is not None:
        record["by"], record["strata"] = by, by_value
    return Sheet(lines, record)


def row_strata(rows_by_id: Mapping[str, Mapping[str, Any]], ids: Sequence[str], by: str,
               run_dir: str | Path) -> dict[str, str]:
    """Each of ``ids``' value of ``by`` (its row's ``stratum``); refused in one line when
    the run's ``run.strata`` is not ``by`` or a row has none."""
    column = _run_strata(run_dir)
    if column != by:
        made = (f"was stratified by {column!r}{closest(by, [column])}" if column
                else "was made without run.strata")
        raise ConfigError(
            f"label --by {by}: the run in {run_dir} {made}, so its rows carry no {by} value; "
            f"score it again with run.strata={by} (the verdict cache answers the judge's part "
            "for free), then draw from that run")
    out: dict[str, str] = {}
    for k in ids:
        value = rows_by_id[k].get("stratum")
        if not isinstance(value, str):
            raise DatasetError(str(Path(run_dir) / "samples.jsonl"),
                               f"row {k!r} has no stratum: the rows were not written by a run "
                               f"with run.strata={by}", field="stratum")
        out[k] = value
    return out


def _draw_by(
    rows_by_id: Mapping[str, dict[str, Any]], eligible: Sequence[str], n: int, seed: int,
    by: str, run_dir: str | Path, counts: Mapping[str, int] | None = None,
) -> tuple[list[str], dict[str, dict[str, int]]]:
    """A seeded uniform draw within each value of the rows' ``stratum`` (the run's
    ``run.strata`` must be ``by``), and per value its samples and how many were drawn.
    ``counts``: how many to draw from each value (a plan's), else ``n`` shared by
    ``plan.allocate``."""
    from harness.confidence.plan import allocate

    groups: dict[str, list[str]] = {}
    for k, value in row_strata(rows_by_id, eligible, by, run_dir).items():
        groups.setdefault(value, []).append(k)
    if counts is not None:
        counts = {v: min(counts.get(v, 0), len(ids)) for v, ids in groups.items()}
    else:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"label: expected a number of samples from 1, got {n!r}")
        counts = allocate({v: len(ids) for v, ids in groups.items()}, n, by)
    rng = random.Random(seed)
    drawn: list[str] = []
    for value in sorted(groups):
        drawn += rng.sample(groups[value], counts[value])
    return drawn, {v: {"population": len(groups[v]), "drawn": counts[v]} for v in sorted(groups)}


def run_setting(run_dir: str | Path, key: str) -> Any:
    """The run's ``run.<key>`` as its ``config.yaml`` holds it; None when it cannot say."""
    import yaml

    try:
        cfg = yaml.safe_load((Path(run_dir) / "config.yaml").read_text("utf-8"))
        return cfg["run"].get(key)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError):
        return None


def _run_strata(run_dir: str | Path) -> str | None:
    """The run's ``run.strata``; None without."""
    column = run_setting(run_dir, "strata")
    return column if isinstance(column, str) else None


def sheet_bytes(sheet: Sheet) -> dict[str, bytes]:
    """The three files' contents by kind: the CSV (UTF-8 with a BOM, as spreadsheets read
    it; cells spreadsheet-safe), the JSON lines (data as it is) and ``draw.json``."""
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(COLUMNS)
    for line in sheet.lines:
        writer.writerow(["" if line[c] is None else escape_cell(str(line[c])) for c in COLUMNS])
    jsonl = "".join(json.dumps(line, ensure_ascii=False).translate(_BREAKS) + "\n"
                    for line in sheet.lines)
    return {"csv": table.getvalue().encode("utf-8-sig"), "jsonl": jsonl.encode("utf-8"),
            "draw": (json.dumps(sheet.record, indent=1) + "\n").encode("utf-8")}


def taken(folder: Path) -> Path | None:
    """The first of the sheet's names that something holds in ``folder`` (a file, a folder,
    a symbolic link, one that points nowhere included), or None. Looked at twice once one
    is found, so that a sheet being written meanwhile is named by its CSV, linked first."""
    for _ in range(2):
        found = [folder / n for n in FILES.values() if os.path.lexists(folder / n)]
        if not found:
            return None
    return found[0]


def refuse_taken(path: Path) -> ConfigError:
    """The one line for a sheet's name that is taken."""
    what = ("is a symbolic link (a sheet is never written through one)"
            if path.is_symlink() else "exists (a sheet may already be filled in)")
    return ConfigError(f"label: {path} {what}; name another folder, or move it away")


def write_sheet(folder: str | Path, sheet: Sheet) -> dict[str, Path]:
    """Write the sheet's three files into ``folder`` (made when missing), whole or not at
    all; a ``ConfigError`` naming the file when one of the names is taken, however and
    whenever that happened. On any failure, Ctrl-C included, what this call made is
    removed and nothing else. Returns the three paths by kind."""
    folder = Path(folder)
    made = _make_folder(folder)
    try:
        with _Folder(folder) as where:
            where.write(sheet_bytes(sheet), folder)
    except BaseException:
        for path in reversed(made):  # folders this call made, when left empty
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return {kind: folder / name for kind, name in FILES.items()}


def label_sheet(run_dir: str | Path, n: int, seed: int, out: str | Path) -> dict[str, Path]:
    """Draw ``n`` samples of the finished run in ``run_dir`` with ``seed`` and write the
    labelling sheet into the folder ``out``: ``labels.csv``, ``labels.jsonl`` and
    ``draw.json``. Refuses a folder that already holds any of them (a sheet may be filled
    in) before reading the run, and again, for good, when it writes. Returns the three
    paths by kind. (``harness label`` also fills in cut texts between the draw and the
    write: ``draw_sheet``, then ``write_sheet``.)"""
    before = taken(Path(out))
    if before is not None:
        raise refuse_taken(before)
    return write_sheet(out, draw_sheet(run_dir, n, seed))


def _make_folder(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing parents; the ones this call made, outermost first."""
    missing = []
    for path in (folder, *folder.parents):
        if os.path.lexists(path):
            break
        missing.append(path)
    made = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:  # another process made it meanwhile: not ours
            continue
        made.append(path)
    return made


class _Folder:
    """A folder held open, so that every name is created, linked and removed in the folder
    that was opened, whatever is renamed meanwhile (POSIX ``*at`` calls; plain paths where
    there are none)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fd: int | None = None

    def __enter__(self) -> _Folder:
        if os.open in os.supports_dir_fd and os.link in os.supports_dir_fd:
            self.fd = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def _at(self, name: str) -> str:
        return name if self.fd is not None else str(self.folder / name)

    def write(self, files: dict[str, bytes], folder: Path) -> None:
        """Write each of ``files`` (by kind) under a name of its own, then link them to
        their names in ``FILES`` order; on any failure remove what this call made: its own
        names, and the sheet's names that are links to them (told by inode, so a file
        someone else made is never touched)."""
        temps: dict[str, str] = {}
        ours: set[tuple[int, int]] = set()
        made: list[str] = []  # names created in place (no hard links here)
        try:
            for kind, data in files.items():
                temp = f".{FILES[kind]}.{os.getpid()}.{secrets.token_hex(6)}.part"
                ours.add(self.new_file(temp, data))
                temps[kind] = temp
            for kind, temp in temps.items():
                if not self.place(temp, FILES[kind], files[kind], made):
                    raise refuse_taken(folder / FILES[kind])
        except BaseException:
            for name in FILES.values():
                if name in made or self._identity(name) in ours:
                    self.remove(name)
            raise
        finally:
            for temp in temps.values():
                self.remove(temp)

    def new_file(self, name: str, data: bytes) -> tuple[int, int]:
        """Create ``name`` (never an existing one, never through a link) holding ``data``,
        flushed to disk; its device and inode."""
        fd = os.open(self._at(name), _NEW, 0o666, dir_fd=self.fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            self.remove(name)
            raise
        os.close(fd)
        return st.st_dev, st.st_ino

    def place(self, temp: str, name: str, data: bytes, made: list[str]) -> bool:
        """Give the written ``temp`` its ``name``; False when the name is taken (by a file,
        a folder or a link, one pointing nowhere included). Where the file system has no
        hard links, ``name`` is created holding ``data`` and noted in ``made``."""
        try:
            os.link(self._at(temp), self._at(name), src_dir_fd=self.fd, dst_dir_fd=self.fd,
                    follow_symlinks=False)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in _NO_LINKS:
                raise
        try:
            self.new_file(name, data)
        except FileExistsError:
            return False
        made.append(name)
        return True

    def _identity(self, name: str) -> tuple[int, int] | None:
        try:
            st = os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def remove(self, name: str) -> None:
        """Remove ``name``, made by this process; gone already is fine."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._at(name), dir_fd=self.fd)


def read_draw(labels_path: str | Path) -> dict[str, Any] | None:
    """The ``draw.json`` beside a labels file, or None when there is none (or it is not a
    draw record)."""
    path = Path(labels_path).with_name(DRAW)
    try:
        record = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(record, dict) and isinstance(record.get("drawn"), list)
    return record if ok else None


def drawn_as_recorded(
    labelled: Sequence[str], record: dict[str, Any] | None
) -> tuple[bool, str | None]:
    """``(random_draw, note)`` for the labelled sample ids against the recorded draw."""
    if record is None:
        return False, NOT_DRAWN
    drawn = {str(i) for i in record["drawn"]}
    outside = [i for i in labelled if i not in drawn]
    if outside:
        return False, (f"{len(outside)} labelled sample(s) were not in the seeded draw "
                       f"(seed {record.get('seed')}): " + NOT_DRAWN.split(": ", 1)[1])
    if len(set(labelled)) < len(drawn):
        return False, (f"{len(set(labelled))} of the {len(drawn)} drawn samples are fully "
                       "labelled: the interval assumes the others are missing at random")
    return True, None
