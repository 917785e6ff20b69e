"""Shared helpers for the benchmark scripts: paths, timing summaries, output, test data."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT_DIR = REPO / "benchmarks" / "out"

#: The interpreter every subprocess uses: the project's virtualenv when present.
_VENV_PYTHON = REPO / ".venv" / "bin" / "python"
PYTHON = str(_VENV_PYTHON) if _VENV_PYTHON.exists() else sys.executable

#: Quoted (not measured here; ragas is not installed) reference figures.
RAGAS_NON_LLM_S_PER_1000 = 1.2
RAGAS_ID_BASED_S_PER_1000 = 0.4


def judge_bench_parser(doc: str) -> argparse.ArgumentParser:
    """The options the judge benchmarks share (the fixture judge, rounds, pacing memory)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--latency-sd-ms", type=float, default=50.0,
                        help="Gaussian jitter of the test judge's latency (0: constant)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", action="store_true",
                        help="keep the limit adaptive pacing learned between runs (as sweep "
                        "jobs in one process do); default: every run starts cold")
    return parser


def forget_pacing() -> None:
    """Start the next judge cold: adaptive pacing remembers each endpoint's limit per process
    (``harness.judges.transport.pacing``), which a one-off CLI run never has."""
    from harness.judges.transport import pacing

    pacing.forget()


def child_env() -> dict[str, str]:
    """The environment for CLI subprocesses: ours, without ``MLFLOW_TRACKING_URI``."""
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    mem_gib = None
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        mem_gib = round(pages * page_size / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "date": _dt.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "mem_gib": mem_gib,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


def summarise(times: Sequence[float]) -> dict[str, Any]:
    """Median, best and all of a list of repeated wall times (seconds)."""
    return {
        "median_s": statistics.median(times),
        "best_s": min(times),
        "all_s": list(times),
    }


def write_results(name: str, data: dict[str, Any]) -> Path:
    """Write ``benchmarks/out/<name>.json`` and return its path."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A small GitHub-flavoured markdown table."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


# Plain English words; texts drawn from them look like prose to an edit distance.
_WORDS_TEXT = """the of and to in is was for that on with as by at from it be this are an or which
    were have has not but had they their one all can more been its also there other when
    who into than some these would first only time after most over new years such may two
    many about during between used while under both because made where known being people
    world state city water system data model river energy company school history music
    government country group family public large early later several number local species
    research process field power market theory design light health network language
    within through against another including however although since without across around
    retrieval context question answer document passage relevant ranking precision source
    report study result method value level order general form small high long great part
    area line work life name house book change point policy support service
    """
WORDS: tuple[str, ...] = tuple(_WORDS_TEXT.split())


def english_text(rng: random.Random, min_len: int = 150, max_len: int = 400) -> str:
    """A prose-like string of ``min_len``..``max_len`` characters (deterministic in ``rng``)."""
    target = rng.randint(min_len, max_len)
    words = rng.choices(WORDS, k=target // 3)
    text = " ".join(words)[: target - 1].rstrip()
    return text[:1].upper() + text[1:] + "."


_LETTERS = "abcdefghijklmnopqrstuvwxyz "


def near_copy(rng: random.Random, text: str, max_edits: int = 8) -> str:
    """``text`` with 1..``max_edits`` random single-character substitutions, insertions
    or deletions."""
    chars = list(text)
    for _ in range(rng.randint(1, max_edits)):
        pos = rng.randrange(len(chars))
        op = rng.randrange(3)
        if op == 0:
            chars[pos] = rng.choice(_LETTERS)
        elif op == 1:
            chars.insert(pos, rng.choice(_LETTERS))
        elif len(chars) > 1:
            del chars[pos]
    return "".join(chars)

