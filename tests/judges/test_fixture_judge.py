"""``judge=fixture``: every LLM variant runs offline (no key, no model, no network) on the
bundled dataset, with the scores its labels (or its overlap rule) imply, computed here with
``harness.extend.average_precision`` from the labels themselves."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from helpers.errors import fails

from harness.extend import average_precision

SAMPLE = ROOT / "harness" / "data" / "sample_rag.jsonl"
#: Each variant's average-precision epsilon (its conf/metric file) and what it judges against.
VARIANTS = {"llm_with_reference": (1e-10, "reference"),
            "llm_without_reference": (1e-10, "response"),
            "contextual_precision": (0.0, "reference")}
NO_KEY = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}


def samples() -> list[dict[str, Any]]:
    return [json.loads(x) for x in SAMPLE.read_text("utf-8").splitlines() if x.strip()]


def label(question: str, context: str) -> int:
    """A label that has nothing to do with the reference ids: a coin seeded by the pair."""
    return int(random.Random(f"{question}\x00{context}").random() < 0.5)


def write_labels(path: Path, skip: int | None = None) -> Path:
    lines = []
    for n, s in enumerate(samples()):
        for i, c in enumerate(s["retrieved_contexts"]):
            if (n, i) != (skip, 0):
                lines.append(json.dumps({"question": s["user_input"], "context": c,
                                         "relevant": label(s["user_input"], c)}))
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


@pytest.mark.parametrize("metric", list(VARIANTS))
def test_every_llm_variant_scores_what_the_labels_imply(tmp_path: Path, metric: str) -> None:
    labels = write_labels(tmp_path / "labels.jsonl")
    result = run_cli(f"metric={metric}", "judge=fixture", f"judge.labels={labels}",
                     "tracking=none", cwd=tmp_path, env=NO_KEY)
    assert result.returncode == 0, result.stderr
    eps = VARIANTS[metric][0]
    rows = {r["id"]: r for r in result.rows()}
    want = []
    for s in samples():
        verdicts = [label(s["user_input"], c) for c in s["retrieved_contexts"]]
        assert rows[s["id"]]["verdicts"] == verdicts
        assert rows[s["id"]]["score"] == pytest.approx(average_precision(verdicts, eps), abs=1e-12)
        want.append(average_precision(verdicts, eps))
    summary = result.summary()
    assert summary["n_scored"] == len(want)
    assert summary["mean"] == pytest.approx(sum(want) / len(want), abs=1e-12)
    assert summary["judge"]["model"] == "fixture" and summary["judge"]["rule"] == "labels"


def overlap(answer: str, context: str, share: float) -> int:
    """The rule, from its definition: the chunk holds ``share`` of the answer's words."""
    wanted = set(re.findall(r"\w\w+", answer.lower()))
    have = set(re.findall(r"\w\w+", context.lower()))
    return int(bool(wanted) and len(wanted & have) / len(wanted) >= share)


@pytest.mark.parametrize(("metric", "share"), [("llm_with_reference", 0.5),
                                               ("llm_without_reference", 0.3),
                                               ("contextual_precision", 0.5)])
def test_the_overlap_rule_without_labels(tmp_path: Path, metric: str, share: float) -> None:
    result = run_cli(f"metric={metric}", "judge=fixture", f"judge.min_overlap={share}",
                     "tracking=none", cwd=tmp_path, env=NO_KEY)
    assert result.returncode == 0, result.stderr
    eps, against = VARIANTS[metric]
    rows = {r["id"]: r for r in result.rows()}
    seen = set()
    for s in samples():
        verdicts = [overlap(s[against], c, share) for c in s["retrieved_contexts"]]
        seen.update(verdicts)
        assert rows[s["id"]]["verdicts"] == verdicts, s["id"]
        assert rows[s["id"]]["score"] == pytest.approx(average_precision(verdicts, eps), abs=1e-12)
    assert seen == {0, 1}  # the rule says both


def test_a_chunk_without_a_label(tmp_path: Path) -> None:
    labels = write_labels(tmp_path / "labels.jsonl", skip=0)
    first = samples()[0]
    result = run_cli("metric=llm_with_reference", "judge=fixture", f"judge.labels={labels}",
                     "tracking=none", cwd=tmp_path, env=NO_KEY)
    assert result.returncode == 0, result.stderr
    row = next(r for r in result.rows() if r["id"] == first["id"])
    assert row["score"] is None
    assert "no label in" in row["error"] and first["user_input"][:30] in row["error"]
    assert result.summary()["n_unscored"] == 1
    kept = run_cli("metric=llm_with_reference", "judge=fixture", f"judge.labels={labels}",
                   "judge.unlabelled=irrelevant", "tracking=none", cwd=tmp_path, env=NO_KEY)
    row = next(r for r in kept.rows() if r["id"] == first["id"])
    verdicts = [0] + [label(first["user_input"], c) for c in first["retrieved_contexts"][1:]]
    assert row["verdicts"] == verdicts
    assert row["score"] == pytest.approx(average_precision(verdicts, 1e-10), abs=1e-12)


@pytest.mark.parametrize(("text", "fragments"), [
    ('{"question": "q", "context": "c", "relevant": 1}\n'
     '{"question": "q", "context": "c", "relevant": 0}\n',
     ["labels.jsonl:2: field 'relevant'", "contradicts the label on line 1"]),
    ('{"question": "q", "context": "c", "relevant": "yes"}\n',
     ["labels.jsonl:1: field 'relevant'", "expected 0 or 1"]),
    ('{"question": "q", "relevant": 1}\n', ["labels.jsonl:1: field 'context'"]),
    ('{"question": "q", "context": "bad \\ud800", "relevant": 1}\n',
     ["labels.jsonl:1: field 'context'", "lone surrogate"]),
    ("not json\n", ["labels.jsonl:1", "not valid JSON"]),
    ("\n", ["labels.jsonl", "contains no labels"]),
])
def test_a_bad_labels_file_is_one_line(tmp_path: Path, text: str, fragments: list[str]) -> None:
    (tmp_path / "labels.jsonl").write_text(text, "utf-8")
    fails(run_cli("metric=llm_with_reference", "judge=fixture",
                  f"judge.labels={tmp_path / 'labels.jsonl'}", "tracking=none", cwd=tmp_path,
                  env=NO_KEY), *fragments)


def test_bad_settings(tmp_path: Path) -> None:
    base = ("metric=llm_with_reference", "judge=fixture", "tracking=none")
    fails(run_cli(*base, f"judge.labels={tmp_path / 'none.jsonl'}", cwd=tmp_path, env=NO_KEY),
          "none.jsonl", "file not found (judge.labels)")
    fails(run_cli(*base, "judge.min_overlap=0", cwd=tmp_path, env=NO_KEY), "judge.min_overlap")
    fails(run_cli(*base, "judge.rule=ids", cwd=tmp_path, env=NO_KEY), "judge.rule")


TINY = ROOT / "tests" / "data" / "beir_tiny"


def _tiny() -> tuple[dict[str, str], dict[str, str], list[tuple[str, str, float]]]:
    """Queries, document contents (title, a blank line, text) and the judged pairs."""
    read = [json.loads(x) for x in (TINY / "queries.jsonl").read_text("utf-8").splitlines()
            if x.strip()]
    queries = {q["_id"]: q["text"] for q in read}
    docs = {}
    for line in (TINY / "corpus.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            docs[d["_id"]] = f"{d['title']}\n\n{d['text']}" if d.get("title") else d["text"]
    pairs = []
    for line in (TINY / "qrels" / "test.tsv").read_text("utf-8").splitlines()[1:]:
        q, d, g = line.split("\t")
        if q in queries and d in docs:
            pairs.append((q, d, float(g)))
    return queries, docs, pairs


@pytest.mark.parametrize("agree", [True, False])
def test_judge_agreement_against_labels(tmp_path: Path, agree: bool) -> None:
    queries, docs, pairs = _tiny()
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({
        "question": queries[q], "context": docs[d], "relevant": int((g >= 1) == agree)}) + "\n"
        for q, d, g in pairs), "utf-8")
    result = run_cli("task=judge_agreement", "dataset=beir", f"dataset.path={TINY}",
                     "judge=fixture", f"judge.labels={labels}", "tracking=none",
                     cwd=tmp_path, env=NO_KEY)
    assert result.returncode == 0, result.stderr
    summary = result.summary()
    assert summary["pairs"] == len(pairs)
    assert summary["accuracy"] == (1.0 if agree else 0.0)
