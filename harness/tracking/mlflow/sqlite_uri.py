"""Where a local SQLite store's database is, from its URI: ``sqlite:///mlflow.db`` (in the
working folder), ``sqlite:////abs/mlflow.db``, with SQLAlchemy's options after ``?``
(``?timeout=30``), or in SQLite's own URI form that SQLAlchemy passes on with ``uri=true``:
``sqlite:///file:/abs/mlflow.db?mode=ro&uri=true`` (``mode=ro``: read-only)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote

from harness.core.errors import TrackingError
from harness.core.redact import redact_uri

PREFIX = "sqlite:///"
_MEMORY = ("", ":memory:")


@dataclass(frozen=True, slots=True)
class SqliteUri:
    """A local SQLite store's URI, taken apart."""

    path: str  # as written, relative or absolute ("" or ":memory:": in memory)
    file_form: bool  # SQLite's URI form (``file:PATH`` with ``uri=true``)
    query: str  # after "?"
    params: dict[str, str]


def parse(uri: str) -> SqliteUri | None:
    """``uri`` taken apart (``None``: not a local SQLite store)."""
    if not uri.startswith(PREFIX):
        return None
    path, _, query = uri[len(PREFIX):].partition("?")
    params = {k.lower(): v for k, v in parse_qsl(query, keep_blank_values=True)}
    file_form = path.startswith("file:") and params.get("uri", "").lower() in ("true", "1")
    if file_form:
        path = unquote(path[len("file:"):])
        if path.startswith("//"):  # file:///abs/mlflow.db: an empty authority
            path = path[2:]
    return SqliteUri(path, file_form, query, params)


def local_file(uri: str) -> Path | None:
    """The database file (relative: the working folder's, as MLflow opens it); ``None`` for
    another kind of store or one in memory."""
    parts = parse(uri)
    if parts is None or parts.path in _MEMORY:
        return None
    return Path(parts.path).expanduser()


def absolute(uri: str) -> str:
    """``uri`` with its database's path made absolute (a process that changes folder, or
    ``mlflow ui`` run elsewhere, opens the same file); other stores as they are."""
    parts = parse(uri)
    if parts is None or parts.path in _MEMORY or parts.path.startswith("/"):
        return uri
    path = str(Path(parts.path).expanduser().absolute())
    if parts.file_form:
        path = "file:" + quote(path, safe="/")
    return PREFIX + path + (f"?{parts.query}" if parts.query else "")


def read_only(uri: str) -> bool:
    """Whether the URI opens the database read-only (``mode=ro`` or ``immutable=1`` in
    SQLite's URI form)."""
    parts = parse(uri)
    return parts is not None and parts.file_form and (
        parts.params.get("mode") == "ro" or parts.params.get("immutable") in ("1", "true"))


def check_writable(uri: str) -> None:
    """Refuse, before any work, a store whose URI opens it read-only: a run logs to it."""
    if read_only(uri):
        raise TrackingError(
            f"MLflow store {redact_uri(uri)}: its URI opens the database read-only "
            "(mode=ro or immutable=1); drop that from it to log runs there, or set "
            "tracking.tracking_uri=sqlite:///OTHER/mlflow.db to use another store, or "
            "tracking=none to log nothing")
