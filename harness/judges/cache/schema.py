"""The PostgreSQL verdict cache's tables, statements and errors, and the plain connection
``harness cache`` uses (``PgCacheAdmin``).

Everything lives in the schema ``harness_cache``. ``entries`` holds the replies and the
claims: a row whose ``value`` is NULL is a key being paid for now by ``owner`` until
``expires`` (renewed while the call runs). The view ``replies`` shows the stored replies
with the SQLite cache's columns, so ``info`` and ``prune`` run the same statements on both.
``meta`` holds the schema version. Connections set ``search_path`` to the schema.
"""

from __future__ import annotations

import math
import os
from typing import Any

from harness.core.errors import ConfigError
from harness.core.redact import redact, redact_uri, register
from harness.core.text import clip

#: Bumped when the tables change; a cache of another version is refused, not altered.
SCHEMA_VERSION = "1"
#: ``pg_advisory_xact_lock`` key serialising first use (creation of the tables).
_LOCK = 0x6861726E  # "harn"
_DDL = (
    "CREATE SCHEMA IF NOT EXISTS harness_cache",
    "CREATE TABLE IF NOT EXISTS harness_cache.meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "INSERT INTO harness_cache.meta VALUES ('schema_version', %s) ON CONFLICT DO NOTHING",
    """CREATE TABLE IF NOT EXISTS harness_cache.entries (
        key TEXT PRIMARY KEY, model TEXT NOT NULL, prompt_sha TEXT NOT NULL,
        variant TEXT NOT NULL, created DOUBLE PRECISION NOT NULL,
        prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
        value TEXT, owner TEXT, expires TIMESTAMPTZ)""",
    "CREATE INDEX IF NOT EXISTS entries_prompt ON harness_cache.entries (prompt_sha)",
    "CREATE INDEX IF NOT EXISTS entries_created ON harness_cache.entries (created)",
    """CREATE OR REPLACE VIEW harness_cache.replies AS SELECT key, model, prompt_sha, variant,
        created, prompt_tokens, completion_tokens, value
        FROM harness_cache.entries WHERE value IS NOT NULL""",
)
_TABLES = ("meta", "entries", "replies")
PRESENT = "SELECT " + " AND ".join(
    f"to_regclass('harness_cache.{t}') IS NOT NULL" for t in _TABLES
)
#: The version and whether this role may write (claims and replies) and prune.
META = """SELECT (SELECT value FROM harness_cache.meta WHERE name = 'schema_version'),
    has_table_privilege('harness_cache.entries', 'SELECT, INSERT, UPDATE, DELETE'),
    has_table_privilege('harness_cache.replies', 'DELETE')"""
#: A key's value (NULL: claimed, being paid for) or no row.
SELECT_VALUE = "SELECT value FROM entries WHERE key = %s"
#: Claim a key nobody holds, or one whose claim's lease ran out (the server's clock
#: decides). The condition is checked on the newest version of a conflicting row, so a
#: reply stored meanwhile is never claimed over.
TRY_CLAIM = """INSERT INTO entries VALUES (%(key)s, '', '', '', %(created)s, 0, 0, NULL,
        %(owner)s, clock_timestamp() + make_interval(secs => %(lease)s))
    ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, expires = EXCLUDED.expires
    WHERE entries.value IS NULL AND entries.expires < clock_timestamp()
    RETURNING owner"""
RENEW = """UPDATE entries SET expires = clock_timestamp() + make_interval(secs => %s)
    WHERE owner = %s AND value IS NULL AND key = ANY(%s)"""
RELEASE = "DELETE FROM entries WHERE key = %s AND owner = %s AND value IS NULL"
#: Store a reply (a claim of its key ends with it).
UPSERT_REPLY = """INSERT INTO entries VALUES (%(key)s, %(model)s, %(prompt_sha)s, %(variant)s,
        %(created)s, %(prompt_tokens)s, %(completion_tokens)s, %(value)s, NULL, NULL)
    ON CONFLICT (key) DO UPDATE SET model = EXCLUDED.model, prompt_sha = EXCLUDED.prompt_sha,
        variant = EXCLUDED.variant, created = EXCLUDED.created,
        prompt_tokens = EXCLUDED.prompt_tokens, completion_tokens = EXCLUDED.completion_tokens,
        value = EXCLUDED.value, owner = NULL, expires = NULL"""
SIZE = "SELECT pg_total_relation_size('harness_cache.entries')"
_TEAMS = "pip install -e '.[teams]' (or pip install 'psycopg[binary]')"


def shown(url: str) -> str:
    """``url`` as messages show it: without credentials."""
    return redact_uri(url)


def import_psycopg(setting: str) -> Any:
    """The ``psycopg`` module, or a ``ConfigError`` saying how to install it."""
    try:
        import psycopg
    except ImportError as e:
        raise ConfigError(
            f"{setting}: PostgreSQL's driver psycopg is not installed ({e}); {_TEAMS}, "
            f"or leave {setting} unset for the local SQLite file"
        ) from None
    return psycopg


def connect_error(e: Exception, url: str, setting: str) -> ConfigError:
    """The one line for a PostgreSQL error on ``url``: the cause and what to do."""
    text = redact(" ".join(str(e).split()))
    low, state = text.lower(), getattr(e, "sqlstate", None)
    if state in ("28P01", "28000") or "password" in low or "authentication" in low:
        cause = "the server refused the user or password"
        todo = "check them (in the URL, or the password in PGPASSWORD or ~/.pgpass)"
    elif state == "3D000" or ("database" in low and "does not exist" in low):
        cause = "no such database"
        todo = "create it (createdb NAME, or CREATE DATABASE NAME) or name another in the URL"
    elif state == "42501" or "permission denied" in low:
        cause = "the role may not create or write the cache's tables"
        todo = ("have the database owner GRANT CREATE ON DATABASE (first use) or the tables' "
                "privileges in schema harness_cache to it")
    elif isinstance(e, TimeoutError):  # harness.judges.cache.stall: frozen mid-statement
        cause = "the server stopped answering"
        todo = "check the server (stopped, overloaded, or the network to it)"
    elif str(state).startswith("57P"):
        cause = "the server shut down or is starting up"
        todo = "check the server and its log"
    elif isinstance(e, import_psycopg(setting).OperationalError):
        cause = "cannot reach the server"
        todo = "check host and port, and that PostgreSQL runs and accepts TCP connections"
    else:
        cause, todo = "PostgreSQL failed", "check the server's log"
    return ConfigError(f"{setting}={shown(url)}: {cause} ({clip(text, 300)}); {todo}")


def check_meta(row: Any, url: str, setting: str, *, write: bool, prune: bool = False) -> None:
    """Refuse a cache of another schema version, or one this role may not write."""
    version, writable, deletable = row if row is not None else (None, False, False)
    where = f"{setting}={shown(url)}"
    if version != SCHEMA_VERSION:
        raise ConfigError(
            f"{where}: the verdict cache in it has schema version {version!r}, this harness "
            f"reads {SCHEMA_VERSION!r}; use the matching harness version, or another database"
        )
    if (write and not writable) or (prune and not deletable):
        what = "delete from" if prune and not deletable else "write to"
        raise ConfigError(
            f"{where}: this role may not {what} the cache's tables; have their owner GRANT "
            "SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA harness_cache to it"
        )


async def ensure_schema(conn: Any, url: str, setting: str) -> None:
    """Create the tables when missing (one creator at a time) and check them."""
    psycopg = import_psycopg(setting)
    try:
        present = (await (await conn.execute(PRESENT)).fetchone())[0]
        if not present:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
                for statement in _DDL:
                    await conn.execute(statement, (SCHEMA_VERSION,) if "%s" in statement else ())
        row = await (await conn.execute(META)).fetchone()
    except psycopg.Error as e:
        raise connect_error(e, url, setting) from None
    check_meta(row, url, setting, write=True)


def token_count(value: Any) -> int:
    """A reply's token count as stored (0 when it is not a count; at most int4)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return min(int(value), 2**31 - 1) if ok and value >= 0 else 0


class PgCacheAdmin:
    """A plain connection to the cache for ``harness cache`` (its ``query`` takes
    the SQLite cache's statements, with ``?`` placeholders).

    Args:
        url: The cache's URL.
        prune: Check that this role may delete entries.
        setting: The flag named in messages.

    ``exists`` is false when no judged run has created the tables yet.
    """

    def __init__(self, url: str, *, prune: bool = False, setting: str = "--url") -> None:
        psycopg = import_psycopg(setting)
        self.url, self.location, self._psycopg = url, shown(url), psycopg
        for secret in (url_password(url), os.environ.get("PGPASSWORD")):
            register(secret)
        try:
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=10,
                                       application_name="harness-cache")
        except psycopg.Error as e:
            raise connect_error(e, url, setting) from None
        try:
            self._db.execute("SET search_path TO harness_cache")
            self.exists = bool(self._db.execute(PRESENT).fetchone()[0])
            if self.exists:
                row = self._db.execute(META).fetchone()
                check_meta(row, url, setting, write=False, prune=prune)
        except psycopg.Error as e:
            self._db.close()
            raise connect_error(e, url, setting) from None
        except ConfigError:
            self._db.close()
            raise
        self.setting = setting

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[list[Any], int]:
        """Run one statement: rows and row count; a failure is a ``ConfigError``."""
        try:
            cursor = self._db.execute(sql.replace("?", "%s"), args)
            rows = cursor.fetchall() if cursor.description else []
            return rows, cursor.rowcount
        except self._psycopg.Error as e:
            raise connect_error(e, self.url, self.setting) from None

    def size_bytes(self) -> int:
        """The tables' size on the server, indexes included."""
        return int(self.query(SIZE)[0][0][0])

    def close(self) -> None:
        """Close the connection."""
        self._db.close()


def url_password(url: str) -> str | None:
    """The password in ``url`` (decoded), if any."""
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def check_url(url: Any, setting: str = "judge.cache_url") -> str:
    """``url`` if it is a ``postgresql://`` URL (checked without psycopg), else a
    ``ConfigError`` naming ``setting`` (the URL shown without its credentials)."""
    from urllib.parse import parse_qsl, urlsplit

    example = ("a postgresql://USER@HOST:PORT/DATABASE URL (the password in it, or in "
               "PGPASSWORD)")
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"{setting}: expected {example}, or null for the local file; "
                          f"got {url!r}")
    text = url.strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises ValueError for a malformed port)
    except ValueError as e:
        raise ConfigError(f"{setting}={shown(text)}: {e}; expected {example}") from None
    if parts.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"{setting}={shown(text)}: expected {example} (a SQLite file is "
                          "judge.cache_path)")
    if "${" in text:  # e.g. a reference inside a value hidden from Hydra: never resolved
        raise ConfigError(f"{setting}={shown(text)}: holds an interpolation (${{...}}) that was "
                          "not resolved; give the password in PGPASSWORD or ~/.pgpass, or the "
                          "whole URL as one reference: judge.cache_url='${oc.env:CACHE_URL}'")
    if any(k.strip().lower() == "password" for k, _ in parse_qsl(parts.query)):
        raise ConfigError(f"{setting}: a password in the URL's query would be written where "
                          "the URL is; give it as postgresql://USER:PASSWORD@HOST/DB (masked "
                          "everywhere) or in PGPASSWORD")
    return text
