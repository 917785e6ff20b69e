"""Runs ragas 0.4.3 LLMContextPrecisionWithReference over the parity dataset (throwaway venv).

Usage: python run_ragas.py DATASET.json BASE_URL OUT.json [CONCURRENCY]
The LLM is ragas's LangChain wrapper around ``langchain_openai.ChatOpenAI`` with
``base_url`` = the fixture judge; scoring goes through ragas's own ``evaluate()``.
A subclass only RECORDS the verdict list ragas aggregates (it changes nothing).
"""
import contextvars
import json
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

t_import = time.perf_counter()
import ragas  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from ragas import EvaluationDataset, RunConfig, evaluate  # noqa: E402
from ragas.llms import LangchainLLMWrapper  # noqa: E402
from ragas.metrics import LLMContextPrecisionWithReference  # noqa: E402

import_s = time.perf_counter() - t_import

_row = contextvars.ContextVar("row", default=None)
VERDICTS = {}


class Recording(LLMContextPrecisionWithReference):
    async def _ascore(self, row, callbacks):
        _row.set(row["user_input"])
        return await super()._ascore(row, callbacks)

    def _calculate_average_precision(self, verifications):
        VERDICTS[_row.get()] = [1 if v.verdict else 0 for v in verifications]
        return super()._calculate_average_precision(verifications)


with open(sys.argv[1], encoding="utf-8") as f:
    data = json.load(f)
url, out_path = sys.argv[2], sys.argv[3]
conc = int(sys.argv[4]) if len(sys.argv) > 4 else 16
llm = LangchainLLMWrapper(ChatOpenAI(model="test-judge", base_url=url, api_key="sk-fixture",
                                     max_retries=0))
metric = Recording(llm=llm)
rows = [{k: s[k] for k in ("user_input", "reference", "response", "retrieved_contexts")}
        for s in data["samples"]]
ds = EvaluationDataset.from_list(rows)
t0, c0 = time.perf_counter(), time.process_time()
res = evaluate(ds, metrics=[metric], run_config=RunConfig(max_workers=conc, max_retries=1),
               raise_exceptions=True, show_progress=False)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
scores = [float(d[metric.name]) for d in res.scores]
out = {
    "library": "ragas", "version": ragas.__version__,
    "metric": "LLMContextPrecisionWithReference (legacy evaluate())",
    "import_s": import_s, "score_wall_s": wall, "score_cpu_s": cpu,
    "scores": [repr(s) for s in scores],
    "verdicts": [VERDICTS.get(r["user_input"]) for r in rows],
}
with open(out_path, "w", encoding="utf-8") as f:
    json.dump(out, f)
