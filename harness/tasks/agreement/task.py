"""``task=judge_agreement``: how often does a judge config agree with human relevance labels?

``python -m harness task=judge_agreement dataset=trec_dl19 judge=... prompt=query_relevance``
runs the judge over (query, passage) pairs with human grades (BEIR qrels, judged negatives
included) and reports accuracy, precision and recall of "relevant", Cohen's kappa and a
confusion matrix per grade, to summary.json, agreement.jsonl and MLflow.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from harness import __version__
from harness.core.errors import ConfigError, JudgeError
from harness.core.protocols import Judge, Parts
from harness.core.redact import redact_tree, register_tree
from harness.core.settings import Job, JobValue
from harness.core.summary import AgreementSummary
from harness.core.types import JudgeRequest, JudgeSubject
from harness.report.writers import AGREEMENT
from harness.run.outputs import write_text
from harness.run.record import base_tags, finish, tracked
from harness.tasks.agreement.stats import Pair, agreement, pairs_from

Outcome = tuple[int, str] | str


class JudgeAgreement:
    """Judge sampled human-graded pairs and compare with the grades.

    Args:
        name: The task's name, as in outputs.
        pairs_per_query: Judged pairs sampled per query (null: all), with ``run.seed``.
        min_grade: The lowest human grade counted as relevant (null: the dataset's).
    """

    unused_groups: tuple[str, ...] = ("metric",)
    shardable = False  # one judge, one process: its calls are concurrent already

    def __init__(
        self,
        name: str = "judge_agreement",
        pairs_per_query: int | None = 10,
        min_grade: float | None = None,
    ) -> None:
        if pairs_per_query is not None and pairs_per_query < 1:
            raise ConfigError(
                f"task.pairs_per_query: expected a number >= 1 or null, got {pairs_per_query}"
            )
        self.name, self.pairs_per_query, self.min_grade = name, pairs_per_query, min_grade

    def run(self, parts: Parts, job: Job) -> tuple[AgreementSummary, JobValue]:
        """Judge every sampled pair, compare, write, log; return kappa as the objective."""
        register_tree(job.config)  # secret-named settings masked in every text from now
        corpus = parts.dataset.corpus()
        if corpus is None:
            raise ConfigError(
                "task=judge_agreement needs a BEIR dataset with qrels (e.g. dataset=trec_dl19)"
            )
        judge, prompt = self._judge_and_prompt(job)
        if prompt.mode != "pointwise":
            raise ConfigError("task=judge_agreement needs a judge and a pointwise prompt")
        min_grade = self.min_grade if self.min_grade is not None else parts.dataset.min_grade
        samples = list(parts.dataset.samples(parts.settings.limit))
        docs = {d.id: d for d in corpus.documents}
        pairs = pairs_from(samples, docs, self.pairs_per_query, parts.settings.seed)
        rows_path = job.out_dir / "agreement.jsonl"
        tags = {**base_tags(job), "prompt.sha256": prompt.sha256, "task": "judge_agreement"}
        with tracked(parts, job, tags, lambda: rows_path.unlink(missing_ok=True)):
            outcomes = judge_all(judge, prompt, pairs)
        rows, human, judged, grades = compared(pairs, outcomes, min_grade)
        summary = AgreementSummary(
            job.choices, min_grade, len(rows) - len(human), agreement(human, judged, grades),
            judge.describe(), judge.stats.as_dict(), prompt.describe(), __version__,
            self.pairs_per_query, dict(job.config.get("dataset", {})))
        write_text(rows_path, "".join(json.dumps(redact_tree(r)) + "\n" for r in rows))
        finish(parts, job, summary, AGREEMENT, rows=rows_path)
        if not parts.settings.quiet:
            result = summary.result
            print(f"  judge agreement over {result['pairs']} pairs: accuracy "
                  f"{_three(result['accuracy'])}, kappa {_three(result['cohen_kappa'])}, "
                  f"precision {_three(result['precision'])}, recall {_three(result['recall'])}")
            print(f"  outputs  {job.out_dir}")
        return summary, float(summary.result["cohen_kappa"])

    @staticmethod
    def _judge_and_prompt(job: Job) -> tuple[Judge, Any]:
        from harness.core.trust import CONFIG_DIR
        from harness.prompts.template import PromptTemplate

        assert job.build is not None, "judge_agreement needs a job that can build groups"
        judge: Judge = job.build("judge")
        if "prompt" in job.config:
            prompt = job.build("prompt")
        else:
            prompt = PromptTemplate.from_file(str(Path(CONFIG_DIR) / "prompt/query_relevance.yaml"))
        return judge, prompt


def _three(value: float | None) -> str:
    """A rate as the console shows it: 3 decimals ("n/a" when undefined, e.g. precision
    with no pair judged relevant); ``summary.json`` keeps full precision."""
    return "n/a" if value is None else f"{value:.3f}"


def judge_all(judge: Judge, prompt: Any, pairs: list[Pair]) -> list[Outcome]:
    """The judge's verdict and reason for every pair (its error line when it failed for
    good), after its preflight; the judge is closed after."""
    from harness.core.aio import LoopThread
    from harness.judges.replies import parse

    async def one(pair: Pair) -> Outcome:
        messages = prompt.messages(question=pair.question, answer="", context=pair.passage)
        request = JudgeRequest(messages, prompt.kind, prompt_sha=prompt.sha256,
                               variant="judge_agreement", subject=JudgeSubject(
                                   pair.question, None, (pair.passage,), pair.query_id,
                                   (pair.doc_id,)))
        try:
            return await judge.ask(request, lambda c: parse.pointwise(c.content))
        except JudgeError as e:
            return str(e)

    async def everything() -> list[Outcome]:
        return list(await asyncio.gather(*(one(p) for p in pairs)))

    loop = LoopThread()
    try:
        loop.run(judge.preflight())
        return loop.run(everything())
    finally:
        loop.run(judge.aclose())
        loop.close()


def compared(
    pairs: list[Pair], outcomes: list[Outcome], min_grade: float
) -> tuple[list[dict[str, Any]], list[int], list[int], list[float]]:
    """The rows of ``agreement.jsonl``, and the human label, verdict and grade of each pair
    the judge answered."""
    rows, human, judged, grades = [], [], [], []
    for pair, outcome in zip(pairs, outcomes, strict=True):
        row: dict[str, Any] = {"query_id": pair.query_id, "doc_id": pair.doc_id,
                               "grade": pair.grade, "human": int(pair.grade >= min_grade)}
        if isinstance(outcome, str):
            row.update(judge=None, error=outcome)
        else:
            row.update(judge=outcome[0], reason=outcome[1], error=None)
            human.append(row["human"])
            judged.append(outcome[0])
            grades.append(pair.grade)
        rows.append(row)
    return rows, human, judged, grades
