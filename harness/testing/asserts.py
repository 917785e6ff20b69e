"""Assert context precision inside a test suite: score samples (or a config file's run) with
any variant through the same code path as ``harness.evaluate`` and the CLI, and fail below a
floor, printing the worst samples.

The verdict cache (``judge.cache``, on by default) is shared with every other run, so a
rerun of an unchanged test asks the judge nothing.
"""

from __future__ import annotations

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
    metric: str | Sequence[str] = "id_based",
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
            ``llm_without_reference``, ``contextual_precision``; or a list of them
            (``["id_ranked", "non_llm"]`` or ``"[id_ranked,non_llm]"``), all scored in one
            run as ``harness.evaluate`` scores them (the floors apply to the first, the
            headline; each one's numbers are in ``summary["variants"]``).
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
    from harness.api import evaluate, metric_choice

    checked = checked_floors(floors)
    result = evaluate(samples, metric, overrides=merged(overrides), fields=fields)
    judge(result, metric_choice(metric), checked, label, worst)
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

    The file is YAML: ``metric`` (the variant, or a list of them), ``overrides`` (settings in
    CLI syntax, e.g. ``[dataset=jsonl, dataset.path=data.jsonl, retriever=bm25]``; a relative
    path in a path setting is read against the file's folder: ``harness.testing.paths``),
    ``floors`` and ``worst``. ``overrides`` here are applied after the file's.
    """
    __tracebackhide__ = True
    spec = load_config(path)
    chosen = {**spec.get("floors", {}), **(floors or {})}
    checked = checked_floors(chosen, f"{path}: floors")
    from harness.api import metric_choice

    metric = metric_choice(spec.get("metric", "id_based"))
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
    metric = spec.get("metric", "")
    if not isinstance(metric, str) and not (
            isinstance(metric, list) and metric and all(isinstance(m, str) for m in metric)):
        raise ConfigError(f"{file}: metric: expected a variant name or a list of them, got "
                          f"{metric!r}")
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


def run_overrides(metric: str | Sequence[str], overrides: Sequence[str]) -> EvaluationResult:
    """Run the job ``python -m harness metric=METRIC OVERRIDES`` would, in this process and
    into a temporary folder (``tracking=none`` unless the overrides choose a tracker), by
    the runner the CLI uses (``harness.api.run_job``); ``metric`` may list several variants
    (``[a,b]`` or a list)."""
    from harness.api import metric_choice, run_in_process
    from harness.config.compose import caller_overrides

    metric = metric_choice(metric)
    given = merged(overrides)
    chosen = {k: v for k, _, v in (o.partition("=") for o in given) if "." not in k}
    tracking = [] if "tracking" in chosen else ["tracking=none"]
    args = [f"metric={metric}", *tracking, "run.quiet=true", "run.progress=false",
            "run.report=false", *caller_overrides(given)]
    choices = {"dataset": "sample", "retriever": "precomputed", "tracking": "none", **{
        k: v for k, v in chosen.items() if k in ("dataset", "retriever", "tracking")}}
    return run_in_process(args, metric, choices, "test", refuse_shards=(
        "run.shards: a test scores in its own process; set run.shards=1"))


def merged(*lists: Sequence[str]) -> list[str]:
    """The overrides of ``lists`` in order, a key given again taking the place of its
    earlier value (Hydra refuses a group chosen twice)."""
    out: dict[str, str] = {}
    for override in (o for given in lists for o in given):
        key = override.partition("=")[0].lstrip("+~")
        out.pop(key, None)
        out[key] = override
    return list(out.values())
