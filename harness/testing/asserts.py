"""Assert context precision inside a test suite: score samples (or a config file's run) with
any variant through the same code path as ``harness.evaluate`` and the CLI, and fail below a
floor, printing the worst samples.

The verdict cache (``judge.cache``, on by default) is shared with every other run, so a
rerun of an unchanged test asks the judge nothing.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.testing.checks import WORST, checked_floors, judge
from harness.testing.paths import anchored

if TYPE_CHECKING:
    from harness.api import EvaluationResult

#: The keys a config file may hold.
CONFIG_KEYS = ("metric", "overrides", "floors", "worst")


def assert_context_precision(
    samples: Sequence[Any],
    metric: str = "id_based",
    *,
    floors: Mapping[str, float],
    overrides: Sequence[str] = (),
    fields: Mapping[str, str] | None = None,
    worst: int = WORST,
    label: str | None = None,
) -> EvaluationResult:
    """Score ``samples`` with ``metric`` (as ``harness.evaluate``) and fail below a floor.

    Args:
        samples: Records in ragas, ragas-legacy or deepeval field names (``harness.evaluate``).
        metric: The variant: ``id_based``, ``id_ranked``, ``non_llm``, ``llm_with_reference``,
            ``llm_without_reference``, ``contextual_precision``.
        floors: The lowest accepted value of each number: ``mean``, ``success_rate``,
            ``mrr``, ``recall_at_k``, ``ndcg_at_k``, ...; e.g. ``{"mean": 0.6}``.
        overrides: Settings in CLI syntax (``judge=local``, ``judge.base_url=URL``, ...).
        fields: Harness field -> key in your records, where they differ.
        worst: How many of the worst samples a failure prints.
        label: The name in the session summary (default: the running test's node id).

    Returns:
        The run's rows and summary. Raises ``FloorError`` (an ``AssertionError``) with the
        worst samples when a floor is missed.
    """
    __tracebackhide__ = True
    from harness.api import evaluate

    checked = checked_floors(floors)
    result = evaluate(samples, metric, overrides=merged(overrides), fields=fields)
    judge(result, metric, checked, label, worst)
    return result


def check_config(
    path: str | Path,
    *,
    floors: Mapping[str, float] | None = None,
    overrides: Sequence[str] = (),
    worst: int | None = None,
    label: str | None = None,
) -> EvaluationResult:
    """Run the config file ``path`` and fail below its floors (``floors`` here win).

    The file is YAML: ``metric`` (the variant), ``overrides`` (settings in CLI syntax, e.g.
    ``[dataset=jsonl, dataset.path=data.jsonl, retriever=bm25]``; a relative path in a path
    setting is read against the file's folder: ``harness.testing.paths``), ``floors`` and
    ``worst``. ``overrides`` here are applied after the file's.
    """
    __tracebackhide__ = True
    spec = load_config(path)
    chosen = {**spec.get("floors", {}), **(floors or {})}
    checked = checked_floors(chosen, f"{path}: floors")
    metric = spec.get("metric", "id_based")
    result = run_overrides(metric, [*spec.get("overrides", []), *overrides])
    judge(result, metric, checked, label, spec.get("worst", WORST) if worst is None else worst)
    return result


def load_config(path: str | Path) -> dict[str, Any]:
    """The checked content of a config file; a ``ConfigError`` naming the file and key."""
    import yaml

    from harness.core.errors import ConfigError, closest

    file = Path(path)
    try:
        spec = yaml.safe_load(file.read_text("utf-8"))
    except OSError as e:
        raise ConfigError(f"{file}: cannot read the config file ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{file}: not YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(spec, dict):
        raise ConfigError(f"{file}: expected a mapping with keys {', '.join(CONFIG_KEYS)}")
    for key in spec:
        if key not in CONFIG_KEYS:
            raise ConfigError(f"{file}: unknown key {key!r}{closest(str(key), CONFIG_KEYS)}; "
                              f"a config file holds {', '.join(CONFIG_KEYS)}")
    if not isinstance(spec.get("metric", ""), str):
        raise ConfigError(f"{file}: metric: expected a variant name, got {spec['metric']!r}")
    given = spec.get("overrides", [])
    if not isinstance(given, list) or not all(isinstance(o, str) and "=" in o for o in given):
        raise ConfigError(f"{file}: overrides: expected a list of KEY=VALUE settings, "
                          f"got {given!r}")
    worst = spec.get("worst", WORST)
    if isinstance(worst, bool) or not isinstance(worst, int) or worst < 0:
        raise ConfigError(f"{file}: worst: expected a whole number >= 0, got {worst!r}")
    spec["overrides"] = anchored(given, file.parent)  # paths: from the file's folder
    if "floors" in spec:
        spec["floors"] = checked_floors(spec["floors"], f"{file}: floors")
    return spec


def run_overrides(metric: str, overrides: Sequence[str]) -> EvaluationResult:
    """Run the job ``python -m harness metric=METRIC OVERRIDES`` would, in this process and
    into a temporary folder (``tracking=none`` unless the overrides choose a tracker)."""
    from harness.api import EvaluationResult
    from harness.config.build import build, instantiate
    from harness.config.compose import composed, custom_settings, job_config
    from harness.core.errors import ConfigError
    from harness.core.settings import Job

    given = merged(overrides)
    chosen = {k: v for k, _, v in (o.partition("=") for o in given) if "." not in k}
    tracking = [] if "tracking" in chosen else ["tracking=none"]
    cfg = composed((f"metric={metric}", *tracking, "run.quiet=true", "run.progress=false",
                    "run.report=false", *custom_settings(given)))
    parts = build(cfg)
    if parts.settings.shards > 1:
        parts.close()
        raise ConfigError("run.shards: a test scores in its own process; set run.shards=1")
    choices = {"dataset": "sample", "retriever": "precomputed", "tracking": "none", **{
        k: v for k, v in chosen.items() if k in ("dataset", "retriever", "tracking")},
        "metric": metric}
    with tempfile.TemporaryDirectory(prefix="harness-test-") as tmp:
        job = Job(job_config(cfg), Path(tmp), choices, f"test metric={metric}",
                  build=lambda group: instantiate(cfg, group))
        try:
            summary = parts.task.run(parts, job)[0].as_json()
        finally:
            parts.close()
        text = (Path(tmp) / "samples.jsonl").read_text("utf-8")
    return EvaluationResult(summary, [json.loads(line) for line in text.splitlines()])


def merged(*lists: Sequence[str]) -> list[str]:
    """The overrides of ``lists`` in order, a key given again taking the place of its
    earlier value (Hydra refuses a group chosen twice)."""
    out: dict[str, str] = {}
    for override in (o for given in lists for o in given):
        key = override.partition("=")[0].lstrip("+~")
        out.pop(key, None)
        out[key] = override
    return list(out.values())
