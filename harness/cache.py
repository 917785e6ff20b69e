"""Inspect and prune the verdict cache: ``python -m harness.cache``.

    python -m harness.cache info                      # size, entries by model and prompt
    python -m harness.cache prune --older-than 30d    # delete entries older than 30 days
    python -m harness.cache prune --prompt 3f2a9c     # delete one prompt version's entries
    python -m harness.cache prune --model gpt-4o-mini
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys

from harness.judges.cache import VerdictCache, default_path

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` -> seconds."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhdw])", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"expected an age like 30d, 12h or 90m, got {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def main(argv: list[str] | None = None) -> int:
    """Run the cache command; return the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m harness.cache", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--path", default=None, help=f"cache file (default: {default_path()})")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="size and entries by model, prompt and variant")
    info.add_argument("--json", action="store_true", help="print JSON")
    prune = sub.add_parser("prune", help="delete entries matching every condition given")
    prune.add_argument("--older-than", type=parse_age, help="age such as 30d, 12h, 90m")
    prune.add_argument("--prompt", help="prompt sha256 (or a prefix of it)")
    prune.add_argument("--model", help="judge model name")
    args = parser.parse_args(argv)

    cache = VerdictCache(args.path or default_path())
    try:
        if args.command == "info":
            summary = cache.summary()
            if args.json:
                print(json.dumps(summary, indent=2))
                return 0
            size_mb = summary["bytes"] / 1e6
            print(f"{summary['path']}: {summary['entries']:,} entries, {size_mb:.1f} MB")
            for g in summary["groups"]:
                print(
                    f"  {g['entries']:>8,}  {g['model']:<24} prompt {g['prompt_sha256'][:12]}  "
                    f"{g['variant']:<22} {_when(g['oldest'])} .. {_when(g['newest'])}  "
                    f"{g['prompt_tokens'] + g['completion_tokens']:,} tokens"
                )
            return 0
        if args.older_than is None and args.prompt is None and args.model is None:
            parser.error("prune needs --older-than, --prompt or --model")
        removed = cache.prune(
            older_than_s=args.older_than, prompt_sha=args.prompt, model=args.model
        )
        print(f"removed {removed:,} entries from {cache.path}")
        return 0
    finally:
        cache.close()


if __name__ == "__main__":
    sys.exit(main())
