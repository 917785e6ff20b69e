"""``run.shard_backend=ray``: a shard's worker is a Ray actor, on the cluster ``ray.init()``
finds (the one this process already joined, as in a Ray launcher's job; ``RAY_ADDRESS``;
one started with ``ray start`` on this machine), else on a Ray instance started for the run.

Every node must see the dataset and the run's folder at the same paths (a shared
filesystem): workers read their byte range there and write their rows beside the run's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.core.errors import ConfigError
from harness.core.redact import redact
from harness.core.text import one_line
from harness.shards.worker import Outcome, ShardFailed, ShardResult, ShardWorker, failure

#: Seconds between polls of the actors' progress.
POLL_S = 0.5


class RayPool:
    """An actor per shard (one CPU each; a second thread answers progress polls)."""

    def __init__(self, workers: list[ShardWorker]) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "run.shard_backend=ray: Ray is not installed; pip install 'harness[ray]', "
                "or use run.shard_backend=processes"
            ) from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            try:
                ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
            except Exception as e:  # noqa: BLE001 - Ray's many ways of not connecting
                why = one_line(redact(str(e).strip().splitlines()[0])) if str(e).strip() else (
                    type(e).__name__)
                raise ConfigError(
                    f"run.shard_backend=ray: cannot start or reach a Ray cluster ({why}); "
                    "check RAY_ADDRESS, or use run.shard_backend=processes"
                ) from None
        actor: Any = ray.remote(ShardWorker).options(num_cpus=1, max_concurrency=2)
        self.spans = [w.span for w in workers]
        self.actors: list[Any] = [actor.remote(w.config, w.span, w.rows, w.cwd) for w in workers]
        self.runs = [a.attempt.remote() for a in self.actors]

    def results(self, progress: Callable[[int], None] | None) -> list[ShardResult]:
        """Wait for every shard's result (polling progress); raise the first failure."""
        out: list[Any] = [None] * len(self.runs)
        pending = dict(enumerate(self.runs))
        shown = [0] * len(self.runs)
        while pending:
            ready, _ = self.ray.wait(list(pending.values()), num_returns=len(pending),
                                     timeout=POLL_S)
            for i, ref in list(pending.items()):
                if ref in ready:
                    out[i] = self._value(i, self._get(i, ref))
                    del pending[i]
            if progress is not None:
                for i in list(pending):
                    done = self._get(i, self.actors[i].progress.remote())
                    progress(done - shown[i])
                    shown[i] = done
        if progress is not None:
            for i, result in enumerate(out):
                progress(result.tally.n_samples - shown[i])
        return out

    def call(self, indexes: Sequence[int], method: str, argument: Any) -> list[Any]:
        """Call ``method`` of those actors, in parallel; their results, in order."""
        refs = [(i, self.actors[i].call.remote(method, argument)) for i in indexes]
        return [self._value(i, self._get(i, ref)) for i, ref in refs]

    def close(self) -> None:
        """Kill the actors (and the Ray instance, when this run started it)."""
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started:
            self.ray.shutdown()

    def _get(self, i: int, ref: Any) -> Any:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayError as e:
            why = one_line(redact(str(e).strip().splitlines()[0])) if str(e).strip() else (
                    type(e).__name__)
            raise ShardFailed(
                f"{self.spans[i].describe()}: its Ray actor failed ({why}); the run is not kept"
            ) from None

    def _value(self, i: int, outcome: Outcome) -> Any:
        if outcome[0] != "result":
            raise failure(outcome, self.spans[i])
        return outcome[1]
