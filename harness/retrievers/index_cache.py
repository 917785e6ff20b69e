"""On-disk cache of retrieval indexes, shared by runs and by parallel sweep jobs.

An index lives in ``$XDG_CACHE_HOME/harness/indexes/<key>/`` (``~/.cache/harness/...``
when the variable is unset; ``HARNESS_INDEX_CACHE`` overrides the folder), where ``key``
is the sha256 of the retriever kind, the corpus key (the documents' content hash) and
every setting that shapes the index: BM25's k1, b, method, tokenizer and chunking, the
dense model and chunking. Settings that only read the index (``top_k``, ``rrf_k``,
``candidates``, the device, the batch size) are not in the key, so a sweep over them
builds each index once.

Writes are atomic: an index is built in a temporary folder beside its final place and
renamed into it in one step, so a reader never sees half an index. When two jobs build
the same index at once, the first rename wins and the other job keeps its own copy in
memory and discards its folder. A folder holds ``meta.json`` (what it is, for people and
for ``load``'s consistency check) and the retriever's files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: How many indexes this process built and loaded (``built``, ``loaded``), for tests and
#: diagnostics.
STATS: Counter[str] = Counter()

FORMAT = 1


def cache_root() -> Path:
    """``$HARNESS_INDEX_CACHE``, else ``$XDG_CACHE_HOME/harness/indexes``."""
    explicit = os.environ.get("HARNESS_INDEX_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "harness" / "indexes"


def index_key(kind: str, corpus_key: str, settings: Mapping[str, Any]) -> str:
    """The sha256 naming an index: kind, corpus key and index-shaping settings."""
    payload = json.dumps(
        {"format": FORMAT, "kind": kind, "corpus_key": corpus_key, "settings": settings},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def load_or_build(
    kind: str,
    corpus_key: str,
    settings: Mapping[str, Any],
    n_items: int,
    build: Callable[[], T],
    save: Callable[[T, Path], None],
    load: Callable[[Path], T],
    *,
    enabled: bool = True,
) -> tuple[T, dict[str, Any]]:
    """The index named by ``(kind, corpus_key, settings)``: loaded if cached, else built.

    Args:
        kind: The retriever kind (``bm25``, ``dense``), part of the key.
        corpus_key: The documents' content key.
        settings: The settings that shape the index (JSON-serialisable).
        n_items: How many chunks the index covers; a cached index that disagrees is
            rebuilt (a corpus key that did not change with the corpus).
        build: Builds the index in memory.
        save: Writes a built index into a folder.
        load: Reads an index from a folder.
        enabled: False: build in memory, read and write nothing.

    Returns:
        The index and its provenance: ``key``, ``path``, ``source`` (``built`` or
        ``cache``), ``seconds`` (to build or load), ``build_seconds`` (to build, when it
        was built, also for a cached index) and ``bytes`` (its size on disk, when cached).
    """
    key = index_key(kind, corpus_key, settings)
    info: dict[str, Any] = {"key": key}
    start = time.perf_counter()
    if not enabled:
        index = build()
        STATS["built"] += 1
        seconds = round(time.perf_counter() - start, 3)
        info.update(source="built", path=None, seconds=seconds, build_seconds=seconds)
        return index, info
    root = cache_root()
    final = root / key
    info["path"] = str(final)
    if (final / "meta.json").is_file():
        try:
            meta = json.loads((final / "meta.json").read_text("utf-8"))
            if meta.get("n_items") != n_items:
                raise ValueError(f"holds {meta.get('n_items')} items, the corpus has {n_items}")
            index = load(final)
        except Exception:  # noqa: BLE001 - an unreadable entry is rebuilt, never fatal
            _discard(final)
        else:
            STATS["loaded"] += 1
            info.update(source="cache", seconds=round(time.perf_counter() - start, 3),
                        build_seconds=meta.get("build_seconds"), bytes=folder_bytes(final))
            return index, info
    index = build()
    seconds = round(time.perf_counter() - start, 3)
    STATS["built"] += 1
    info.update(source="built", seconds=seconds, build_seconds=seconds)
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:16]}-", dir=root))
    except OSError:
        return index, info  # a read-only cache: run without it
    try:
        save(index, tmp)
        meta = {
            "kind": kind,
            "corpus_key": corpus_key,
            "settings": dict(settings),
            "n_items": n_items,
            "build_seconds": seconds,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "format": FORMAT,
        }
        (tmp / "meta.json").write_text(
            json.dumps(meta, indent=2, ensure_ascii=False, default=str) + "\n", "utf-8"
        )
        info["bytes"] = folder_bytes(tmp)
        os.rename(tmp, final)  # atomic; fails if another job got there first
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return index, info


def folder_bytes(folder: Path) -> int:
    """The size of the files in ``folder`` (an index on disk), ``meta.json`` aside."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and p.name != "meta.json")


def _discard(folder: Path) -> None:
    """Move a broken entry aside (atomically) and delete it."""
    trash = folder.with_name(f".trash-{folder.name[:16]}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(folder, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)
