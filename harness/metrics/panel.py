"""Several variants as one metric: ``metric=[id_ranked,llm_with_reference]`` scores every
batch with each listed variant (the retriever ran once, before), one row per sample.

The first member is the headline: a row's ``score``, ``verdicts`` and ``error`` (and its
other columns) are the first member's, as in a run of that variant alone, and
``variants`` holds every member's own ``score``, ``verdicts``, ``error`` and details.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from harness.core.aio import LoopThread
from harness.core.boundary import guarded, running
from harness.core.errors import ComponentFailed
from harness.core.protocols import Metric, OnDone
from harness.core.types import RagSample, SampleResult
from harness.metrics.judged import judge_together

T = TypeVar("T")
#: ``guarded(component, call, work)``: the boundary around a member's own code.
Guard = Callable[[str, str, Callable[[], Any]], Any]

#: Judge counters that add up across members; the others are kept per member only.
_MAXED = ("peak_in_flight",)
_NOT_ADDED = ("final_limit", "agreement")


def variant_entry(result: SampleResult) -> dict[str, Any]:
    """One member's part of a row's ``variants``: its score, verdicts, error and details."""
    return {"score": result.score, "verdicts": result.verdicts, "error": result.error,
            **result.details}


class Panel:
    """A ``Metric`` (public API v1) made of the listed variants, in order.

    Args:
        members: The built variants; the first is the headline.
        names: Their option names (``details["variants"]`` keys); default: each ``name``.
        guard: The boundary around a member's calls (default: the one boundary of users'
            code, ``harness.core.boundary.guarded``), so a failure names the member:
            ``metric llm_with_reference: score_batch() ...``.
    """

    def __init__(self, members: Sequence[Metric], names: Sequence[str] | None = None,
                 guard: Guard = guarded) -> None:
        if not members:
            raise ValueError("a panel needs at least one metric")
        self.members = list(members)
        self.names = tuple(names) if names is not None else tuple(m.name for m in members)
        if len(self.names) != len(self.members) or len(set(self.names)) != len(self.names):
            raise ValueError(f"one distinct name per member, got {self.names}")
        self.guard = guard
        #: a member whose judge sends through a Batch API scores its batch's worth at once
        #: (each round of samples waits for its batches: one round is one wait)
        self.batch_size: int | None = max(
            (m.batch_size for m in self.members if m.joins_loop and m.batch_size), default=None)
        self.human_score = None  # each member says its own (``Parts.members``)
        self.joins_loop = False
        self.name = self.members[0].name
        self.prevalidate = any(m.prevalidate for m in self.members)
        self.requires = frozenset().union(*(m.requires for m in self.members))
        #: The judged members, judged at once on one loop (``judge_together``).
        self.together = judge_together(self.members)

    @classmethod
    def built(cls, makers: Sequence[Callable[[], Metric]], names: Sequence[str],
              guard: Guard = guarded) -> Panel:
        """A panel of the members ``makers`` build, in order. When one fails, the members
        already built are closed (their judges' clients and loops) before the error goes on."""
        members: list[Metric] = []
        try:
            for make in makers:
                members.append(make())
        except BaseException:
            for member in members:
                member.close()
            raise
        return cls(members, names, guard)

    def _guarded(self, i: int, call: str, work: Callable[[], T]) -> T:
        result: T = self.guard(f"metric {self.names[i]}", call, work)
        return result

    def needing(self, field: str) -> list[str]:
        """The members that need sample field ``field``."""
        return [n for n, m in zip(self.names, self.members, strict=True) if field in m.requires]

    def preflight(self) -> None:
        """Each member's own check."""
        for i, member in enumerate(self.members):
            self._guarded(i, "preflight()", member.preflight)

    def score_batch(
        self, samples: Sequence[RagSample], on_done: OnDone | None = None
    ) -> list[SampleResult]:
        """Every member scores the batch: the others in turn, then the judged ones at once
        (``together``); a sample's merged result goes to ``on_done`` once every member has
        it (members that report as they finish and members that just return both count)."""
        n = len(samples)
        got: list[dict[int, SampleResult]] = [{} for _ in self.members]
        merged: dict[int, SampleResult] = {}  # the one object a sample's result is

        def ready(index: int) -> None:
            if index in merged or any(index not in g for g in got):
                return
            merged[index] = self._merged([g[index] for g in got])
            if on_done is not None:
                on_done(index, merged[index])

        def mine(m: int) -> OnDone:
            def done(index: int, result: SampleResult) -> None:
                got[m][index] = result
                ready(index)
            return done

        def returned(m: int, results: Any) -> None:
            if not isinstance(results, list) or len(results) != n:
                got_what = (f"{len(results)} results" if isinstance(results, list)
                            else f"a {type(results).__name__}")
                raise ComponentFailed(f"metric {self.names[m]}: score_batch() returned "
                                      f"{got_what} for {n} samples")
            for index, result in enumerate(results):
                if index not in got[m]:
                    got[m][index] = result
                    ready(index)

        for m, member in enumerate(self.members):
            if m not in self.together:
                returned(m, self._guarded(m, "score_batch()",
                                          lambda member=member, m=m: member.score_batch(  # type: ignore[misc]
                                              samples, mine(m))))
        if self.together:
            for m, results in self._judged_together(samples, mine).items():
                returned(m, results)
        return [merged[i] for i in range(n)]

    def _judged_together(self, samples: Sequence[RagSample], mine: Callable[[int], OnDone]
                         ) -> dict[int, list[SampleResult]]:
        """The judged members' batches on their one loop at once; the first of them (in
        list order) that fails stops the others and is raised, named."""
        members: dict[int, Any] = {m: self.members[m] for m in self.together}

        async def all_of() -> dict[int, list[SampleResult]]:
            tasks = {m: asyncio.ensure_future(member.scoring(samples, mine(m)))
                     for m, member in members.items()}
            try:
                await asyncio.wait(tasks.values(), return_when=asyncio.FIRST_EXCEPTION)
            finally:
                pending = [task for task in tasks.values() if not task.done()]
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
            for m, task in tasks.items():  # the others were cancelled for it
                if not task.cancelled() and task.exception() is not None:
                    self._guarded(m, "score_batch()", task.result)  # raises, naming it
            return {m: task.result() for m, task in tasks.items()}

        loop: LoopThread = members[self.together[0]].loop
        judged = ", ".join(self.names[m] for m in self.together)
        with running(f"the judges of metrics {judged}"):
            return loop.run(all_of())

    def _merged(self, results: list[SampleResult]) -> SampleResult:
        head = results[0]
        details = dict(head.details)
        details["variants"] = {name: variant_entry(r)
                               for name, r in zip(self.names, results, strict=True)}
        return dataclasses.replace(head, details=details)

    def _judged(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for i, member in enumerate(self.members):
            got = self._guarded(i, "describe()", member.describe)
            out.append((self.names[i], dict(got) if isinstance(got, dict) else got))
        return out

    def describe(self) -> dict[str, Any]:
        """The first judged member's ``judge`` and ``prompt`` (the run's), and each
        member's own description under ``variants``."""
        described = self._judged()
        top: dict[str, Any] = {}
        for _, got in described:
            if isinstance(got, dict) and "judge" in got:
                top = {k: got[k] for k in ("judge", "prompt") if k in got}
                break
        return {**top, "variants": dict(described)}

    def judges(self) -> dict[str, Any]:
        """Each judged member's judge, by its name (``Metric.judges``)."""
        return {self.names[i]: judge for i, m in enumerate(self.members)
                for judge in m.judges().values()}

    def member_stats(self) -> dict[str, dict[str, float | None]]:
        """Each member's own counters (empty for members without a judge)."""
        return {self.names[i]: dict(self._guarded(i, "stats()", m.stats))
                for i, m in enumerate(self.members)}

    def stats(self) -> dict[str, float | None]:
        """The judge counters of every judged member together: traffic, tokens and costs
        add up (a cost ``None`` when one is unknown), ``peak_in_flight`` is the highest; a
        counter that does not add up (``final_limit``, ``agreement``) is the first judged
        member's (``member_stats`` has each)."""
        total: dict[str, float | None] = {}
        for counters in self.member_stats().values():
            for key, value in counters.items():
                if key not in total:
                    total[key] = value
                elif key in _NOT_ADDED:
                    continue
                elif value is None or total[key] is None:
                    total[key] = None
                elif key in _MAXED:
                    total[key] = max(total[key] or 0, value)
                else:
                    total[key] = (total[key] or 0) + value
        for key in ("cost_usd", "saved_cost_usd"):
            if total.get(key) is not None:
                total[key] = round(float(total[key] or 0), 6)
        return total

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        """Each member's files: the first's where a run of it alone puts them, the others'
        in ``variants/<name>/`` (two judged variants both write ``prompt.yaml``)."""
        paths: list[Path] = []
        for i, member in enumerate(self.members):
            where = Path(out_dir) if i == 0 else Path(out_dir) / "variants" / self.names[i]
            where.mkdir(parents=True, exist_ok=True)
            got = self._guarded(i, "write_artifacts()",
                                lambda m=member, w=where: m.write_artifacts(w))  # type: ignore[misc]
            paths.extend(got)
            if i and not got:
                _remove_empty(where)
        return paths

    def close(self) -> None:
        """Close every member, even when one raises (the first error is raised after)."""
        error: BaseException | None = None
        for member in self.members:
            try:
                member.close()
            except BaseException as e:  # noqa: BLE001 - the others still close
                error = error or e
        if error is not None:
            raise error


def _remove_empty(folder: Path) -> None:
    for path in (folder, folder.parent):
        try:
            path.rmdir()
        except OSError:
            return
