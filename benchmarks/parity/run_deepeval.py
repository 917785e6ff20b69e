"""Runs deepeval's ContextualPrecisionMetric over the parity dataset (inside a throwaway venv).

Usage: python run_deepeval.py DATASET.json BASE_URL OUT.json [CONCURRENCY]
The judge is a custom ``DeepEvalBaseLLM`` that calls BASE_URL through the ``openai`` SDK
(deepeval's own dependency) and validates the reply against the schema deepeval passes in.
"""
import asyncio
import json
import os
import sys
import time

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("ERROR_REPORTING", "NO")

t_import = time.perf_counter()
import deepeval  # noqa: E402
from deepeval.metrics import ContextualPrecisionMetric  # noqa: E402
from deepeval.models import DeepEvalBaseLLM  # noqa: E402
from deepeval.test_case import LLMTestCase  # noqa: E402
from openai import AsyncOpenAI, OpenAI  # noqa: E402

import_s = time.perf_counter() - t_import


class FixtureJudge(DeepEvalBaseLLM):
    def __init__(self, base_url):
        self.base_url = base_url
        self.sync_client = OpenAI(base_url=base_url, api_key="x", max_retries=0)
        self.async_client = AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        super().__init__("test-judge")

    def load_model(self):
        return self.async_client

    def _parse(self, text, schema):
        return schema.model_validate_json(text) if schema is not None else text

    def generate(self, prompt, schema=None):
        r = self.sync_client.chat.completions.create(
            model="test-judge", messages=[{"role": "user", "content": prompt}], temperature=0)
        return self._parse(r.choices[0].message.content, schema)

    async def a_generate(self, prompt, schema=None):
        r = await self.async_client.chat.completions.create(
            model="test-judge", messages=[{"role": "user", "content": prompt}], temperature=0)
        return self._parse(r.choices[0].message.content, schema)

    def get_model_name(self):
        return "test-judge (fixture)"


async def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    model = FixtureJudge(sys.argv[2])
    sem = asyncio.Semaphore(int(sys.argv[4]) if len(sys.argv) > 4 else 16)

    async def one(s):
        metric = ContextualPrecisionMetric(threshold=0.5, model=model, include_reason=True,
                                           async_mode=True)
        tc = LLMTestCase(input=s["user_input"], actual_output=s["response"],
                         expected_output=s["reference"], retrieval_context=s["retrieved_contexts"])
        async with sem:
            await metric.a_measure(tc, _show_indicator=False)
        return metric

    t0, c0 = time.perf_counter(), time.process_time()
    metrics = await asyncio.gather(*(one(s) for s in data["samples"]))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {
        "library": "deepeval", "version": deepeval.__version__,
        "metric": "ContextualPrecisionMetric(threshold=0.5, include_reason=True)",
        "import_s": import_s, "score_wall_s": wall, "score_cpu_s": cpu,
        "scores": [repr(m.score) for m in metrics],
        "verdicts": [[1 if v.verdict.strip().lower() == "yes" else 0 for v in m.verdicts]
                     for m in metrics],
        "success": [m.success for m in metrics],
        "reasons_present": sum(1 for m in metrics if m.reason),
    }
    with open(sys.argv[3], "w", encoding="utf-8") as f:
        json.dump(out, f)


asyncio.run(main())
