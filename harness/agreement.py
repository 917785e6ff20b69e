"""Judge meta-evaluation: how often does a judge config agree with human relevance labels?

``python -m harness task=judge_agreement dataset=trec_dl19 judge=... prompt=query_relevance``
runs the judge over (query, passage) pairs with human grades (BEIR qrels, judged negatives
included) and reports accuracy, precision and recall of "relevant", Cohen's kappa and a
confusion matrix per grade, to summary.json, agreement.jsonl and MLflow.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import ConfigError


@dataclass(frozen=True)
class Pair:
    """One human-judged (query, passage) pair."""

    query_id: str
    doc_id: str
    question: str
    passage: str
    grade: float


def pairs_from(samples: Sequence[Any], docs: dict[str, Any], per_query: int | None, seed: int) -> list[Pair]:
    """Judged pairs of each sample (at most ``per_query``, sampled with ``seed``)."""
    rng = random.Random(seed)
    out = []
    for s in samples:
        judged = [
            (d, g)
            for d, g in zip(s.reference_context_ids or (), s.reference_context_grades or (), strict=True)
            if d in docs
        ]
        if per_query is not None and len(judged) > per_query:
            judged = rng.sample(judged, per_query)
        out += [Pair(s.id, d, s.user_input or "", docs[d].content, g) for d, g in judged]
    return out


def agreement(human: Sequence[int], judge: Sequence[int], grades: Sequence[float]) -> dict[str, Any]:
    """Accuracy, precision/recall/F1 of "relevant", Cohen's kappa, confusion per grade."""
    n = len(human)
    if n == 0:
        raise ConfigError("judge_agreement: no judged pairs to compare")
    tp = sum(h and j for h, j in zip(human, judge, strict=True))
    tn = sum(not h and not j for h, j in zip(human, judge, strict=True))
    fp = sum(not h and j for h, j in zip(human, judge, strict=True))
    fn = n - tp - tn - fp
    accuracy = (tp + tn) / n
    p_yes = ((tp + fp) / n) * ((tp + fn) / n)
    p_no = ((tn + fn) / n) * ((tn + fp) / n)
    expected = p_yes + p_no
    kappa = (accuracy - expected) / (1 - expected) if expected < 1 else 1.0
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else None
    per_grade: dict[str, dict[str, int]] = {}
    for g, j in zip(grades, judge, strict=True):
        row = per_grade.setdefault(f"{g:g}", {"judged_relevant": 0, "judged_not": 0})
        row["judged_relevant" if j else "judged_not"] += 1
    return {
        "pairs": n,
        "accuracy": accuracy,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "cohen_kappa": kappa,
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "by_grade": dict(sorted(per_grade.items())),
    }


def run_agreement(cfg: Any, parts: Any, out_dir: Any, choices: dict[str, str], run_name: str) -> float:
    """The ``judge_agreement`` task: judge every sampled pair, compare, write, log."""
    import asyncio
    import json

    from omegaconf import OmegaConf

    from harness import __version__
    from harness.aio import LoopThread
    from harness.errors import JudgeError
    from harness.judges import parse
    from harness.judges.openai_chat import OpenAIJudge
    from harness.prompts.template import PromptTemplate
    from harness.runner import _instantiate
    from harness.tracking.base import RunRecord

    corpus = getattr(parts.dataset, "corpus", None)
    if corpus is None:
        raise ConfigError("task=judge_agreement needs a BEIR dataset with qrels (e.g. dataset=trec_dl19)")
    judge = _instantiate(cfg, "judge")
    if "prompt" in cfg:
        prompt = _instantiate(cfg, "prompt")
    else:
        from harness.cli import CONFIG_DIR

        prompt = PromptTemplate.from_file(f"{CONFIG_DIR}/prompt/query_relevance.yaml")
    if not isinstance(judge, OpenAIJudge) or prompt.mode != "pointwise":
        raise ConfigError("task=judge_agreement needs a judge and a pointwise prompt")
    task = cfg.task
    min_grade = task.min_grade if task.min_grade is not None else getattr(parts.dataset, "min_grade", 1)
    docs = {d.id: d for d in corpus()}
    samples = list(parts.dataset.samples(parts.settings.limit))
    pairs = pairs_from(samples, docs, task.pairs_per_query, parts.settings.seed)
    loop = LoopThread()

    async def one(pair: Pair) -> tuple[int, str] | str:
        messages = prompt.messages(question=pair.question, answer="", context=pair.passage)
        try:
            return await judge.ask(messages, "pointwise", lambda c: parse.pointwise(c.content),
                                   prompt_sha=prompt.sha256, variant="judge_agreement")
        except JudgeError as e:
            return str(e)

    async def everything() -> list[Any]:
        return list(await asyncio.gather(*(one(p) for p in pairs)))

    tags = {f"choice.{k}": str(v) for k, v in choices.items()}
    tags.update({"harness.version": __version__, "prompt.sha256": prompt.sha256, "task": "judge_agreement"})
    parts.tracker.begin(run_name, tags)
    try:
        loop.run(judge.preflight())
        outcomes = loop.run(everything())
    except BaseException:
        parts.tracker.abort("KILLED")
        raise
    finally:
        loop.run(judge.aclose())
        loop.close()
    rows, human, judged, grades, failed = [], [], [], [], 0
    for pair, outcome in zip(pairs, outcomes, strict=True):
        row = {"query_id": pair.query_id, "doc_id": pair.doc_id, "grade": pair.grade,
               "human": int(pair.grade >= min_grade)}
        if isinstance(outcome, str):
            row.update(judge=None, error=outcome)
            failed += 1
        else:
            row.update(judge=outcome[0], reason=outcome[1], error=None)
            human.append(row["human"])
            judged.append(outcome[0])
            grades.append(pair.grade)
        rows.append(row)
    result = agreement(human, judged, grades)
    summary = {"task": "judge_agreement", "options": choices, "min_grade": min_grade,
               "unjudged_pairs": failed, **result, "judge": {**judge.describe(), **judge.stats.as_dict()},
               "prompt": prompt.describe(), "harness_version": __version__}
    (out_dir / "agreement.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    metrics = {k: result[k] for k in ("pairs", "accuracy", "precision", "recall", "f1", "cohen_kappa")}
    metrics.update({f"judge/{k}": v for k, v in judge.stats.as_dict().items()})
    params = {"task.pairs_per_query": str(task.pairs_per_query), "task.min_grade": str(min_grade),
              "judge.model": judge.model, "prompt.version": prompt.version}
    params.update({f"dataset.{k}": str(v) for k, v in (OmegaConf.to_container(cfg.dataset, resolve=True) or {}).items()
                   if not str(k).startswith("_")})
    parts.tracker.finish(RunRecord(
        params=params, metrics={k: float(v) for k, v in metrics.items() if v is not None},
        tags=tags, artifacts=[str(out_dir / "agreement.jsonl"), str(out_dir / "summary.json")],
    ))
    if not parts.settings.quiet:
        print(f"  judge agreement over {result['pairs']} pairs: accuracy {result['accuracy']:.3f}, "
              f"kappa {result['cohen_kappa']:.3f}, precision {result['precision']}, recall {result['recall']}")
        print(f"  outputs  {out_dir}")
    return float(result["cohen_kappa"])
