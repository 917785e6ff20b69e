"""Several variants in one test check: ``assert_context_precision``, ``check_config`` and the
``harness_config`` marker take a list of variants (``[a,b]`` or a Python list) and run it
through the runner the CLI uses; each variant's mean is the one its single run gives."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from testing.test_plugin import ID_MEAN, ID_SCORES, PLUGIN, decoy_checks
from testing.test_plugin import SAMPLES as ID_SAMPLES

from harness.api import evaluate
from harness.testing import assert_context_precision, check_config
from harness.testing.checks import FloorError

pytest_plugins = ["pytester"]

VARIANTS = ["id_ranked", "non_llm"]
#: The plugin tests' samples, with the relevant chunks' texts as references (non_llm's).
SAMPLES: list[dict[str, Any]] = [
    {**s, "reference_contexts": [t for t, i in zip(s["retrieved_contexts"],
                                                   s["retrieved_context_ids"], strict=True)
                                 if i in s["reference_context_ids"]]} for s in ID_SAMPLES]


def _single(metric: str) -> float:
    mean = evaluate(SAMPLES, metric).mean
    assert mean is not None
    return mean


@pytest.mark.parametrize("metric", [VARIANTS, "[id_ranked,non_llm]", tuple(VARIANTS)])
def test_a_list_of_variants_equals_their_single_runs(metric: Any) -> None:
    result = assert_context_precision(SAMPLES, metric, floors={"mean": ID_MEAN - 0.01})
    variants = result.summary["variants"]
    assert list(variants) == VARIANTS
    assert variants["id_ranked"]["mean"] == pytest.approx(ID_MEAN, abs=1e-12)  # by hand
    # the references are the relevant chunks verbatim: non_llm's verdicts are the ids' (its
    # average precision divides by relevant + 1e-10)
    assert variants["non_llm"]["mean"] == pytest.approx(ID_MEAN, abs=1e-9)
    for name in VARIANTS:
        assert variants[name]["mean"] == _single(name)
    assert result.mean == variants["id_ranked"]["mean"]  # the first is the headline
    assert result.summary["metric"] == "[id_ranked,non_llm]"
    assert [r["id"] for r in result.rows] == ["q1", "q2", "q3"]
    assert [r["variants"]["id_ranked"]["score"] for r in result.rows] == pytest.approx(
        [ID_SCORES[s["id"]] for s in SAMPLES])


def test_the_floors_of_a_list_apply_to_its_headline() -> None:
    with decoy_checks() as made, pytest.raises(FloorError) as missed:
        assert_context_precision(SAMPLES, VARIANTS, floors={"mean": ID_MEAN + 0.01})
    assert f"mean {ID_MEAN:.4g} < {ID_MEAN + 0.01:.4g}" in str(missed.value)
    assert [(c.metric, c.failed) for c in made] == [
        ("[id_ranked,non_llm]", [f"mean {ID_MEAN:.4g} < {ID_MEAN + 0.01:.4g}"])]


def _config(folder: Path, metric: str) -> Path:
    (folder / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SAMPLES))
    path = folder / "check.yaml"
    path.write_text(f"metric: {metric}\noverrides: [dataset=jsonl, dataset.path=samples.jsonl]\n"
                    f"floors: {{mean: {ID_MEAN - 0.01}}}\n")
    return path


@pytest.mark.parametrize("metric", ["[id_ranked, non_llm]", "'[id_ranked,non_llm]'"])
def test_a_config_file_lists_variants(tmp_path: Path, metric: str) -> None:
    """A YAML list and the CLI's ``[a,b]`` string both name two variants."""
    result = check_config(_config(tmp_path, metric))
    assert {n: v["mean"] for n, v in result.summary["variants"].items()} == {
        n: _single(n) for n in VARIANTS}
    assert result.summary["options"]["metric"] == "[id_ranked,non_llm]"
    assert result.summary["options"]["dataset"] == "jsonl"


@pytest.mark.parametrize(("metric", "message"), [
    ("[]", "metric: expected a variant name or a list of them, got []"),
    ("[id_ranked, 3]", "metric: expected a variant name or a list of them, got ['id_ranked', 3]"),
    ("[id_ranked, id_ranked]", "'id_ranked' is listed twice"),
    ("[id_ranked, no_such]", "'no_such' is not a metric option"),
])
def test_a_bad_list_in_a_config_file_is_one_error(tmp_path: Path, metric: str,
                                                  message: str) -> None:
    from harness.core.errors import HarnessError

    with pytest.raises(HarnessError) as bad:
        check_config(_config(tmp_path, metric))
    assert message in str(bad.value)
    assert "\n" not in str(bad.value)


def test_the_marker_runs_a_list_of_variants(pytester: pytest.Pytester) -> None:
    non_llm = _single("non_llm")
    _config(pytester.path, "[id_ranked, non_llm]")
    pytester.makepyfile(test_m=(
        "import pytest\n"
        "@pytest.mark.harness_config('check.yaml')\n"
        "def test_ci(harness_result):\n"
        "    means = {n: v['mean'] for n, v in harness_result.summary['variants'].items()}\n"
        f"    assert means == {{'id_ranked': {ID_MEAN!r}, 'non_llm': {non_llm!r}}}\n"))
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= harness context precision: 1 passed =*",
                                 "PASS test_m.py::test_ci [[]id_ranked,non_llm[]] n=3 mean=*"])
    assert "failed" not in result.stdout.str()  # no "0 failed" either


def test_the_id_ranked_golden_is_average_precision() -> None:
    """The golden above, from the definition (sum of P@k at relevant ranks / relevant)."""
    golden = {"q1": 1.0, "q2": (1 / 2 + 2 / 3) / 2, "q3": 1 / 3}
    scores = dict(ID_SCORES)
    assert scores == pytest.approx(golden)
    assert math.isclose(ID_MEAN, (1 + 7 / 12 + 1 / 3) / 3)
