"""A baseline and candidate of several variants (``metric=[a,b]``): the paired test of each
variant both scored, by PPI++ as well where both runs have human labels for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.compare.pairing import BOOTSTRAP, PPI, shared_variants, variants_of
from harness.compare.ppi_pair import paired_ppi
from harness.compare.stats import paired_test
from harness.compare.store import per_query


def per_variant(c: Any, runs: list[Any], out: Path, stats: tuple[int, float, int],
                notes: list[str]) -> dict[str, Any]:
    """A baseline and candidate of several variants: the paired test of each variant both
    scored (``{variant: test}``, with ``ppi`` and ``interval_used`` as the headline's
    test), and a note saying which were paired and which were not; ``{}`` when both ran
    one variant."""
    base, cand = runs
    if len(variants_of(base)) == len(variants_of(cand)) == 1:
        return {}
    tests: dict[str, Any] = {}
    for variant in shared_variants(base, cand):
        vb, vc = (per_query(c, r.info.run_id, "mean", out, variant) for r in (base, cand))
        if vb and vc:
            tests[variant] = test = paired_test(vc, vb, *stats)
            hb, hc = (per_query(c, r.info.run_id, "human_score", out, variant)
                      for r in (base, cand))
            ppi = paired_ppi(vc, vb, hc, hb, stats[1], stats[2]) if hb and hc else None
            test.update(interval_used=BOOTSTRAP if ppi is None else PPI,
                        **({} if ppi is None else {"ppi": ppi}))
    lines = [_line(v, t) for v, t in tests.items()]
    alone = [f"{v} (baseline only)" for v in variants_of(base) if v not in variants_of(cand)]
    alone += [f"{v} (candidate only)" for v in variants_of(cand) if v not in variants_of(base)]
    notes.append("per variant, candidate - baseline on the ids both scored: "
                 + ("; ".join(lines) or "none paired")
                 + (f"; not compared: {', '.join(alone)}" if alone else ""))
    return tests


def _line(variant: str, test: dict[str, Any]) -> str:
    p = test["p_value"]
    line = (f"{variant} {_fmt(test['mean_diff'])} on {test['n_pairs']} pairs, p = "
            f"{'n/a' if p is None else format(p, '.4g')}")
    ppi = test.get("ppi")
    if ppi:
        lo, hi = ppi["ci"]
        line += (f" (by the judge; PPI++ {ppi['mean_diff']:+.4f} [{lo:+.4f}, {hi:+.4f}] on "
                 f"{ppi['n_labelled']} labelled in both)")
    return line


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.4f}"
