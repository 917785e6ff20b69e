"""Rebuild harness/data/scifact_mini/ (``dataset=scifact_mini``) from the full BEIR SciFact.

A seeded, reproducible subset of ``../shared/data/beir_scifact`` (or
``$HARNESS_SHARED_DATA/beir_scifact``), in BEIR layout:

- ``QUERIES`` test queries drawn with ``random.Random(SEED)`` from the 300 that have qrels;
- every abstract the qrels judge relevant to them;
- ``HARD_PER_RELEVANT`` x as many BM25-hard negatives: the best-ranked non-relevant abstracts
  of each drawn query under BM25 over the *full* corpus (taken rank by rank, round robin
  over the queries), so that retrieval in the subset is not trivial;
- ``RANDOM_PER_RELEVANT`` x as many abstracts drawn at random from the rest.

Records are copied byte for byte, in the source files' order. Run from the repository root:

    .venv/bin/python experiments/scifact_mini/make_subset.py [--source DIR] [--out DIR]

It prints the counts and sizes that ``harness/data/scifact_mini/SOURCE.md`` records; rerun
it and ``git diff`` shows nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
from collections import Counter
from pathlib import Path

SEED = 35
QUERIES = 50
HARD_PER_RELEVANT = 2
RANDOM_PER_RELEVANT = 1
K1, B = 0.9, 0.4  # Anserini's BM25 defaults
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is",
    "it", "its", "of", "on", "or", "that", "the", "to", "was", "were", "with", "this", "these",
    "those", "which", "not", "no", "than",
})


def tokens(text: str) -> list[str]:
    """Lowercased alphanumeric words, stopwords dropped."""
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS]


def bm25_ranking(query: str, docs: dict[str, list[str]], df: Counter[str]) -> list[str]:
    """Document ids by descending BM25 score (ties: by id), documents scoring 0 left out."""
    n = len(docs)
    avg = sum(len(t) for t in docs.values()) / n
    terms = set(tokens(query))
    scores: dict[str, float] = {}
    for did, toks in docs.items():
        tf = Counter(w for w in toks if w in terms)
        if not tf:
            continue
        norm = K1 * (1 - B + B * len(toks) / avg)
        scores[did] = sum(
            math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * f * (K1 + 1) / (f + norm)
            for w, f in tf.items()
        )
    return sorted(scores, key=lambda d: (-scores[d], d))


def jsonl_lines(path: Path) -> list[tuple[str, str]]:
    """``(_id, the line as written)`` for each record."""
    lines = path.read_text("utf-8").splitlines(keepends=True)
    return [(str(json.loads(line)["_id"]), line) for line in lines if line.strip()]


def main() -> None:
    shared = Path(os.environ.get("HARNESS_SHARED_DATA", "../shared/data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=shared / "beir_scifact")
    parser.add_argument("--out", type=Path, default=Path("harness/data/scifact_mini"))
    args = parser.parse_args()
    src: Path = args.source
    out: Path = args.out

    qrel_rows = (src / "qrels" / "test.tsv").read_text("utf-8").splitlines(keepends=True)
    header, rows = qrel_rows[0], [r for r in qrel_rows[1:] if r.strip()]
    relevant: dict[str, list[str]] = {}
    for row in rows:
        qid, did, _ = row.rstrip("\n").split("\t")
        relevant.setdefault(qid, []).append(did)
    queries = jsonl_lines(src / "queries.jsonl")
    judged = sorted((q for q, _ in queries if q in relevant), key=int)
    chosen = set(random.Random(SEED).sample(judged, QUERIES))

    corpus = jsonl_lines(src / "corpus.jsonl")
    records = {did: json.loads(line) for did, line in corpus}
    docs = {did: tokens(f"{r['title']} {r['text']}") for did, r in records.items()}
    df: Counter[str] = Counter(w for toks in docs.values() for w in set(toks))
    needed = {d for q in chosen for d in relevant[q]}
    n_relevant = len(needed)

    rankings = [
        [d for d in bm25_ranking(text_of(queries, q), docs, df) if d not in relevant[q]]
        for q in sorted(chosen, key=int)
    ]
    hard: list[str] = []
    for rank in range(max(len(r) for r in rankings)):
        for ranking in rankings:
            if len(hard) < HARD_PER_RELEVANT * n_relevant and rank < len(ranking):
                doc = ranking[rank]
                if doc not in needed and doc not in hard:
                    hard.append(doc)
    rest = sorted((d for d in records if d not in needed and d not in hard), key=int)
    drawn = random.Random(SEED + 1).sample(rest, RANDOM_PER_RELEVANT * n_relevant)
    keep = needed | set(hard) | set(drawn)

    (out / "qrels").mkdir(parents=True, exist_ok=True)
    write(out / "corpus.jsonl", [line for did, line in corpus if did in keep])
    write(out / "queries.jsonl", [line for qid, line in queries if qid in chosen])
    write(out / "qrels" / "test.tsv", [header, *(r for r in rows if r.split("\t")[0] in chosen)])
    sizes = {p.name: p.stat().st_size for p in (out / "corpus.jsonl", out / "queries.jsonl",
                                                out / "qrels" / "test.tsv")}
    print(f"queries {len(chosen)}, relevant pairs {sum(len(relevant[q]) for q in chosen)}, "
          f"relevant docs {n_relevant}, BM25-hard negatives {len(hard)}, random {len(drawn)}, "
          f"documents {len(keep)}; bytes {sizes} ({sum(sizes.values())} in all)")


def text_of(queries: list[tuple[str, str]], qid: str) -> str:
    """The text of query ``qid``."""
    return str(next(json.loads(line)["text"] for q, line in queries if q == qid))


def write(path: Path, lines: list[str]) -> None:
    """Write ``lines`` as they are (UTF-8, ``\\n`` line ends)."""
    with path.open("w", encoding="utf-8", newline="") as f:
        f.writelines(lines)


if __name__ == "__main__":
    main()
