"""Inspect and prune the verdict cache: ``harness cache``.

    harness cache info                      # size, entries by model and prompt
    harness cache prune --older-than 30d    # delete entries older than 30 days
    harness cache prune --prompt 3f2a9c     # delete one prompt version's entries
    harness cache prune --model gpt-4o-mini
    harness cache info --cache-path FILE    # or judge.cache_path=FILE, as for a run
    harness cache info --url postgresql://USER@HOST/DB   # or judge.cache_url=URL

``prune`` deletes only what its conditions match, all of them at once; without a condition
it deletes nothing. A missing, corrupt or unusable cache file (or an unreachable or
refusing PostgreSQL server) is one ``error:`` line and exit code 2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from harness.core.errors import ConfigError, HarnessError
from harness.core.redact import redact, redact_uri
from harness.judges.cache.postgres import check_url
from harness.judges.cache.schema import PgCacheAdmin
from harness.judges.cache.sqlite import VerdictCache, default_path

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_HEX = frozenset("0123456789abcdef")


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` -> seconds."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhdw])", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"expected an age like 30d, 12h or 90m, got {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def summary(cache: VerdictCache | PgCacheAdmin) -> dict[str, Any]:
    """Size (on disk, or on the server) and entries grouped by model, prompt and variant."""
    groups, _ = cache.query(
        "SELECT model, prompt_sha, variant, COUNT(*), MIN(created), MAX(created), "
        "SUM(prompt_tokens), SUM(completion_tokens) FROM replies "
        "GROUP BY model, prompt_sha, variant ORDER BY MAX(created) DESC"
    )
    if isinstance(cache, PgCacheAdmin):
        where, size = cache.location, cache.size_bytes()
    else:
        files = (cache.path, Path(f"{cache.path}-wal"), Path(f"{cache.path}-shm"))
        where, size = str(cache.path), sum(p.stat().st_size for p in files if p.exists())
    return {
        "path": where,
        "bytes": size,
        "entries": sum(g[3] for g in groups),
        "groups": [
            {
                "model": str(g[0]),
                "prompt_sha256": str(g[1]),
                "variant": str(g[2]),
                "entries": g[3],
                "oldest": _number(g[4]),
                "newest": _number(g[5]),
                "prompt_tokens": int(_number(g[6])),
                "completion_tokens": int(_number(g[7])),
            }
            for g in groups
        ],
    }


def conditions(
    *, older_than_s: float | None = None, prompt_sha: str | None = None, model: str | None = None
) -> tuple[str, tuple[float | str | int, ...]]:
    """The SQL condition and its arguments for ``prune``.

    Args:
        older_than_s: Entries created more than this many seconds ago.
        prompt_sha: A prompt's sha256, or a prefix of it (hex digits; matched as a prefix,
            never as a pattern).
        model: The judge model's exact name.

    Raises:
        ConfigError: No condition, or an empty or malformed one.
    """
    where: list[str] = []
    args: list[float | str | int] = []
    if older_than_s is not None:
        if not math.isfinite(older_than_s) or older_than_s < 0:
            raise ConfigError(f"--older-than must be an age of 0 s or more, got {older_than_s}")
        where.append("created < ?")
        args.append(time.time() - older_than_s)
    if prompt_sha is not None:
        prefix = prompt_sha.strip().lower()
        if not prefix or not set(prefix) <= _HEX or len(prefix) > 64:
            raise ConfigError(
                f"--prompt must be a prompt's sha256 or a prefix of it (hex digits, as 'info' "
                f"lists them), got {prompt_sha!r}; nothing was deleted"
            )
        where.append("substr(prompt_sha, 1, ?) = ?")  # not LIKE, where '%' and '_' match all
        args += [len(prefix), prefix]
    if model is not None:
        if not model.strip():
            raise ConfigError("--model is empty: give the judge model's name; nothing was deleted")
        where.append("model = ?")
        args.append(model)
    if not where:
        raise ConfigError(
            "prune needs --older-than, --prompt or --model (it never deletes everything "
            "unasked); nothing was deleted"
        )
    return " AND ".join(where), tuple(args)


def prune(
    cache: VerdictCache | PgCacheAdmin,
    *,
    older_than_s: float | None = None,
    prompt_sha: str | None = None,
    model: str | None = None,
) -> int:
    """Delete the entries matching every given condition (``conditions``); return how many.

    Raises:
        ConfigError: A bad condition (nothing is deleted), or the file failed.
    """
    where, args = conditions(older_than_s=older_than_s, prompt_sha=prompt_sha, model=model)
    _, removed = cache.query(f"DELETE FROM replies WHERE {where}", args)
    if isinstance(cache, VerdictCache):
        cache.query("PRAGMA wal_checkpoint(TRUNCATE)")
    return removed


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _when(ts: float) -> str:
    try:
        return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")
    except (ValueError, OverflowError, OSError):
        return "?"


def _not_yet(path: Path) -> bool:
    """No cache file, and nothing in the way of one (its nearest existing folder is one)."""
    if path.exists() or path.is_symlink():
        return False
    existing = next((p for p in path.parents if p.exists()), None)
    return existing is not None and existing.is_dir()


def _print_info(info: dict[str, Any]) -> None:
    print(f"{info['path']}: {info['entries']:,} entries, {info['bytes'] / 1e6:.1f} MB")
    for g in info["groups"]:
        print(
            f"  {g['entries']:>8,}  {g['model']:<24} prompt {g['prompt_sha256'][:12]}  "
            f"{g['variant']:<22} {_when(g['oldest'])} .. {_when(g['newest'])}  "
            f"{g['prompt_tokens'] + g['completion_tokens']:,} tokens"
        )


def _hydra_style(argv: list[str]) -> list[str]:
    """``judge.cache_path=FILE`` and ``judge.cache_url=URL`` (a run's settings, as written
    for ``python -m harness``) read as ``--cache-path FILE`` and ``--cache-url URL``."""
    flags = {"judge.cache_path": "--cache-path", "judge.cache_url": "--cache-url"}
    out = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        flag = flags.get(key.lstrip("+")) if sep else None
        out += [flag, value] if flag else [arg]
    return out


def _flag(given: list[str], flags: tuple[str, ...], default: str) -> str:
    """The name under which a setting was given (for messages)."""
    names = {a.partition("=")[0].lstrip("+") for a in given}
    return next((f for f in flags if f in names), default)


def _open(args: argparse.Namespace, given: list[str]) -> VerdictCache | PgCacheAdmin | None:
    """The cache named (``None``: none yet, for ``info``); ``ConfigError`` when unusable."""
    if args.url is not None:
        if args.path is not None:
            raise ConfigError("give the cache file (--path) or the PostgreSQL cache (--url), "
                              "not both")
        setting = _flag(given, ("judge.cache_url", "--url"), "--cache-url")
        admin = PgCacheAdmin(check_url(args.url, setting), prune=args.command == "prune",
                             setting=setting)
        if admin.exists:
            return admin
        admin.close()
        if args.command == "info":
            return None
        raise ConfigError(f"{setting}={admin.location}: no verdict cache in this database yet "
                          "(judged runs create it)")
    if args.path is not None and not args.path.strip():
        flag = _flag(given, ("--path", "judge.cache_path"), "--cache-path")
        raise ConfigError(f"{flag} is empty: give the cache file, or leave {flag} out")
    path = Path(args.path).expanduser() if args.path is not None else default_path()
    if args.command == "info" and _not_yet(path):
        return None
    return VerdictCache(path, create=False, write=args.command == "prune")


def main(argv: list[str] | None = None, prog: str = "harness-cache") -> int:
    """Run the cache command; return the exit code (a signal: 128 + its number)."""
    from harness.cli.signals import stops

    with stops("harness.cache", "a prune is one DELETE, done whole or not at all"):
        return _main(argv, prog)
    return 130  # not reached: stops exits; for the type checker


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as the command's one ``error:`` line (exit 2)."""

    def error(self, message: str) -> NoReturn:
        if "required: command" in message:
            message = "give a command: info or prune"
        see = self.prog.removesuffix(" info").removesuffix(" prune")
        print(f"error: {self.prog}: {message}; see {see} --help", file=sys.stderr)
        sys.exit(2)


def _main(argv: list[str] | None, prog: str) -> int:
    parser = _Parser(prog=prog, description=__doc__.splitlines()[0])
    path_help = (
        f"the cache file, as judge.cache_path names it for a run (default: {default_path()}); "
        "judge.cache_path=FILE and --path FILE work too"
    )
    url_help = ("a PostgreSQL cache, as judge.cache_url names it for a run "
                "(postgresql://USER@HOST:PORT/DB; the password in it or in PGPASSWORD)")
    parser.add_argument("--cache-path", "--path", dest="path", default=None, help=path_help)
    parser.add_argument("--cache-url", "--url", dest="url", default=None, help=url_help)
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="size and entries by model, prompt and variant")
    info.add_argument("--json", action="store_true", help="print JSON")
    cut = sub.add_parser("prune", help="delete entries matching every condition given")
    for command in (info, cut):  # also accepted after the command
        command.add_argument(
            "--cache-path", "--path", dest="path", default=argparse.SUPPRESS, help=path_help
        )
        command.add_argument(
            "--cache-url", "--url", dest="url", default=argparse.SUPPRESS, help=url_help
        )
    cut.add_argument("--older-than", type=parse_age, help="age such as 30d, 12h, 90m")
    cut.add_argument("--prompt", help="prompt sha256 (or a prefix of it)")
    cut.add_argument("--model", help="judge model name")
    given = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(_hydra_style(given))
    try:
        filters: dict[str, Any] = {}
        if args.command == "prune":
            filters = {"older_than_s": args.older_than, "prompt_sha": args.prompt,
                       "model": args.model}
            conditions(**filters)  # checked before the file is opened
        cache = _open(args, given)
        if cache is None:
            where = redact_uri(args.url) if args.url is not None else str(
                Path(args.path).expanduser() if args.path is not None else default_path())
            empty = {"path": where, "bytes": 0, "entries": 0, "groups": []}
            if args.json:
                print(json.dumps(empty, indent=2))
            else:
                print(f"{where}: no verdict cache yet (judged runs create it)")
            return 0
        try:
            if args.command == "info":
                result = summary(cache)
                if args.json:
                    print(json.dumps(result, indent=2))
                else:
                    _print_info(result)
                return 0
            removed = prune(cache, **filters)
        finally:
            cache.close()
    except HarnessError as e:
        print(f"error: {redact(str(e))}", file=sys.stderr)
        return 2
    shown = cache.location if isinstance(cache, PgCacheAdmin) else cache.path
    print(f"removed {removed:,} entries from {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
