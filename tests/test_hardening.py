"""Hardening: the harness keeps working and loses nothing under judge faults."""

import pytest

from harness.metrics.ranking import average_precision
from test_llm_metrics import listwise, pointwise, sample, score

FAULTS = {"fail_429": 0.10, "fail_500": 0.10, "malformed": 0.05, "hang": 0.02, "hang_seconds": 30}


def dataset(server, n=200, k=5):
    samples, expected = [], []
    for i in range(n):
        chunks = [f"sample {i} chunk {j}" for j in range(k)]
        labels = [int((i * 7 + j * 3) % 5 < 2) for j in range(k)]
        server.labels.update(dict(zip(chunks, labels, strict=True)))
        samples.append(sample(chunks, str(i)))
        expected.append(labels)
    return samples, expected


@pytest.mark.parametrize("mode", ["pointwise", "listwise"])
def test_faults_cost_one_extra_request_each_and_change_no_score(judge_server, mode):
    samples, expected = dataset(judge_server)
    judge_cfg = {"cache": False, "timeout": 1.0, "max_retries": 10, "parse_retries": 5,
                 "max_concurrency": 32}
    build = (lambda: pointwise(judge_server, judge=dict(judge_cfg))) if mode == "pointwise" else (
        lambda: listwise(judge_server, judge=dict(judge_cfg), include_reason=False))
    clean = score(build(), samples)
    calls = judge_server.stats.requests
    assert calls == (1000 if mode == "pointwise" else 200)
    eps = 1e-10 if mode == "pointwise" else 0.0
    assert [r.score for r in clean] == [average_precision(v, eps) for v in expected]

    judge_server.reset_stats()
    judge_server.configure(**FAULTS)
    metric = build()
    faulty = score(metric, samples)
    s = judge_server.stats
    injected = s.status_429 + s.status_500 + s.malformed + s.hangs
    assert s.status_429 and s.status_500 and s.malformed and s.hangs
    assert [r.score for r in faulty] == [r.score for r in clean]  # every sample scored, same scores
    assert all(r.error is None for r in faulty)
    assert s.requests == calls + injected  # each fault cost exactly one more request
    stats = metric.judge.stats
    assert stats.failures == 0 and stats.parse_failures == s.malformed
