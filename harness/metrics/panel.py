"""Several variants as one metric: ``metric=[id_ranked,llm_with_reference]`` scores every
batch with each listed variant (the retriever ran once, before), one row per sample.

The first member is the headline: a row's ``score``, ``verdicts`` and ``error`` (and its
other columns) are the first member's, as in a run of that variant alone, and
``variants`` holds every member's own ``score``, ``verdicts``, ``error`` and details.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from harness.core.boundary import guarded
from harness.core.errors import ComponentFailed
from harness.core.protocols import Metric, OnDone
from harness.core.types import RagSample, SampleResult

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
        self.name = self.members[0].name
        self.prevalidate = any(m.prevalidate for m in self.members)
        self.requires = frozenset().union(*(m.requires for m in self.members))

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
        """Every member scores the batch in turn; a sample's merged result goes to
        ``on_done`` once every member has it (members that report as they finish and
        members that just return both count)."""
        n = len(samples)
        got: list[dict[int, SampleResult]] = [{} for _ in self.members]
        merged: dict[int, SampleResult] = {}  # the one object a sample's result is

        def ready(index: int) -> None:
            if index in merged or any(index not in g for g in got):
                return
            merged[index] = self._merged([g[index] for g in got])
            if on_done is not None:
                on_done(index, merged[index])

        for m, member in enumerate(self.members):
            def mine(index: int, result: SampleResult, m: int = m) -> None:
                got[m][index] = result
                ready(index)

            results = self._guarded(m, "score_batch()",
                                    lambda member=member, mine=mine: member.score_batch(  # type: ignore[misc]
                                        samples, mine))
            if not isinstance(results, list) or len(results) != n:
                got_what = (f"{len(results)} results" if isinstance(results, list)
                            else f"a {type(results).__name__}")
                raise ComponentFailed(f"metric {self.names[m]}: score_batch() returned "
                                      f"{got_what} for {n} samples")
            for index, result in enumerate(results):
                if index not in got[m]:
                    got[m][index] = result
                    ready(index)
        return [merged[i] for i in range(n)]

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
