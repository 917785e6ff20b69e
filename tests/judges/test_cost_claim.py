"""The claim of the cost guide, against the test judge's own bill (it bills as OpenAI does:
4 characters a token, prompt caching from 1,024 shared tokens in steps of 128, USD 1.00 /
0.10 / 4.00 per 1M input / cached input / output tokens, a batch line at half): a batch
with the cheaper prompt option bills at most 0.40x today's realtime run, with every sample
scored the same, and the dry run counts the prompt tokens the server then bills within 15 %.

In process on 20 samples x 5 chunks (default lane), and through the CLI on 200 x 5 (slow
lane), as ``benchmarks/bench_cost.py`` measures it for the guide. Not on fewer: the first
request of the cached prompt pays its ~1,400 shared tokens in full, which keeps a run of
under 13 samples above 0.40x (12 samples: 0.4003x; 20: 0.392x; 200: 0.381x).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from helpers.judge import judge, prompt, score
from helpers.judge_server import JudgeServer

from harness.core.types import RagSample
from harness.metrics.contextual_precision import ContextualPrecision
from harness.metrics.judged import JudgedMetric
from harness.metrics.llm import LLMContextPrecision

#: The claim: batch with the prompt option bills at most this share of the realtime bill.
CLAIM = 0.40
#: The dry run's prompt tokens against the server's: at most this far off.
DRY = 0.15

_PLACES = ["Lake Aralen", "Mount Quorra", "Port Sennim", "the Ilsa Canal", "Halvik Tower"]
_WHAT = ["height", "founding year", "length", "population", "architect"]
_FILLER = ["local markets open early on weekdays", "the regional train runs every hour",
           "the old harbour was rebuilt after a storm", "a festival fills the square in May"]


def dataset(n: int, seed: int = 5) -> tuple[list[dict[str, Any]], dict[tuple[str, str], int]]:
    """``n`` samples of 5 chunks shaped as the parity suite's (a question and an answer in
    sentences, chunks of about 110 characters, each relevant or not), and their labels."""
    rng = random.Random(seed)
    rows, labels = [], {}
    for i in range(n):
        place, what, value = rng.choice(_PLACES), rng.choice(_WHAT), rng.randint(10, 9999)
        question = f"What is the {what} of {place}? (case {i:04d})"
        chunks = []
        for k in range(5):
            relevant = rng.random() < 0.4
            text = (f"[doc {i:04d}-{k}] Records state that the {what} of {place} is {value}; "
                    f"{rng.choice(_FILLER)}." if relevant else
                    f"[doc {i:04d}-{k}] {rng.choice(_PLACES)} is known because "
                    f"{rng.choice(_FILLER)} and {rng.choice(_FILLER)}.")
            chunks.append(text)
            labels[(question, text)] = int(relevant)
        rows.append({"id": f"q{i:04d}", "user_input": question,
                     "reference": f"The {what} of {place} is {value}.",
                     "response": f"I believe the {what} of {place} is {value}.",
                     "retrieved_contexts": chunks})
    return rows, labels


ROWS, LABELS = dataset(20)
SAMPLES = [RagSample(id=r["id"], user_input=r["user_input"], reference=r["reference"],
                     response=r["response"], retrieved_contexts=tuple(r["retrieved_contexts"]))
           for r in ROWS]

#: (metric, metric settings, today's prompt, the cheaper option)
CASES = [
    ("llm_with_reference", {}, "llm_with_reference", "llm_with_reference_cached"),
    ("contextual_precision", {"include_reason": False}, "contextual_precision",
     "contextual_precision_verdicts"),
    ("contextual_precision", {}, "contextual_precision", "contextual_precision_verdicts"),
]


def metric(server: JudgeServer, name: str, settings: dict[str, Any], template: str,
           **judged: Any) -> JudgedMetric:
    """The variant ``name`` with the prompt ``template``, its judge on ``server``."""
    j = judge(server, **judged)
    if name == "contextual_precision":
        return ContextualPrecision(name, j, prompt(template), **settings)
    return LLMContextPrecision(name, j, prompt(template), against="reference", **settings)


def billed(server: JudgeServer) -> dict[str, Any]:
    """What the server billed since its counters and prompt cache were last reset."""
    return server.stats.snapshot()


def fresh(server: JudgeServer) -> None:
    server.reset_stats()
    server.clear_prefix_cache()


@pytest.mark.parametrize(("name", "settings", "today", "option"), CASES,
                         ids=["llm_with_reference", "contextual_precision-no-reason",
                              "contextual_precision"])
def test_batch_with_the_prompt_option_bills_at_most_040x_realtime(
        tmp_path: Path, name: str, settings: dict[str, Any], today: str, option: str) -> None:
    with JudgeServer(LABELS) as server:
        realtime = score(metric(server, name, settings, today,
                                cache_path=str(tmp_path / "realtime.sqlite")), SAMPLES)
        paid = billed(server)

        fresh(server)
        cache = str(tmp_path / "batch.sqlite")
        dry_metric = metric(server, name, settings, option, batch=True, cache_path=cache)
        [dry] = [j.go_dry() for j in dry_metric.judges().values()]
        score(dry_metric, SAMPLES)
        assert billed(server)["requests"] == billed(server)["files_uploaded"] == 0
        assert not Path(cache).exists()
        estimate = dry.report()

        fresh(server)
        batch = score(metric(server, name, settings, option, batch=True, batch_poll=0.02,
                             cache_path=cache), SAMPLES)
        bill = billed(server)

    assert all(r.score is not None for r in realtime)
    assert [r.score for r in batch] == [r.score for r in realtime]  # sample by sample, exact
    assert bill["requests"] == 0 and bill["batch_billed_requests"] == bill["billed_requests"]
    assert bill["billed_requests"] == paid["billed_requests"]
    assert bill["billed_usd"] <= CLAIM * paid["billed_usd"], (bill, paid)
    assert bill["billed_usd"] < 0.5 * paid["billed_usd"]  # the option saves beyond the batch
    assert abs(estimate["prompt_tokens"] - bill["billed_prompt_tokens"]) <= (
        DRY * bill["billed_prompt_tokens"])
    assert estimate["requests"] == bill["billed_requests"]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "settings", "today", "option"), CASES,
                         ids=["llm_with_reference", "contextual_precision-no-reason",
                              "contextual_precision"])
def test_the_claim_through_the_cli_on_200_samples(
        tmp_path: Path, name: str, settings: dict[str, Any], today: str, option: str) -> None:
    rows, labels = dataset(200)
    data = tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with JudgeServer(labels) as server:
        common = (f"metric={name}", "dataset=jsonl", f"dataset.path={data}", "judge=local",
                  f"judge.base_url={server.base_url}", "judge.model=test-judge",
                  "tracking=none", *(f"metric.{k}={str(v).lower()}" for k, v in settings.items()))
        real = run_cli(*common, f"judge.cache_path={tmp_path / 'rt.sqlite'}", cwd=tmp_path)
        assert real.returncode == 0, real.stderr
        paid = billed(server)

        fresh(server)
        lane = (*common, "judge.batch=true", "judge.batch_poll=0.05", f"prompt={option}",
                f"judge.cache_path={tmp_path / 'batch.sqlite'}")
        dry = run_cli(*lane, "run.dry_run=true", cwd=tmp_path)
        assert dry.returncode == 0, dry.stderr
        assert billed(server)["requests"] == billed(server)["files_uploaded"] == 0
        estimate = json.loads((dry.out_dir / "estimate.json").read_text("utf-8"))

        fresh(server)
        batch = run_cli(*lane, cwd=tmp_path)
        assert batch.returncode == 0, batch.stderr
        bill = billed(server)

    scores = {r["id"]: r["score"] for r in real.rows()}
    assert len(scores) == 200 and None not in scores.values()
    assert {r["id"]: r["score"] for r in batch.rows()} == scores
    assert bill["batch_billed_requests"] == bill["billed_requests"] == paid["billed_requests"]
    assert bill["billed_usd"] <= CLAIM * paid["billed_usd"], (bill, paid)
    assert abs(estimate["prompt_tokens"] - bill["billed_prompt_tokens"]) <= (
        DRY * bill["billed_prompt_tokens"])
    judged = batch.summary()["judge"]["bill"]  # the run's own bill is the server's
    assert judged["requests"] == {"realtime": 0, "batch": bill["billed_requests"],
                                  "total": bill["billed_requests"]}
    assert judged["prompt_tokens"]["total"] == bill["billed_prompt_tokens"]
    assert judged["prompt_tokens"]["cached"] == bill["billed_cached_tokens"]
