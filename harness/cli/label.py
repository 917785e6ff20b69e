"""Draw the samples to label from a finished run: ``harness label RUN_DIR N``.

    harness label outputs/2026-12-04/10-00-00 150             # seed 0, sheet in RUN_DIR/labels
    harness label outputs/2026-12-04/10-00-00 150 --seed 7 --out sheets/dl19
    harness label outputs/2026-12-04/10-00-00 --width 0.03    # as many as give ±0.03
    harness label outputs/2026-12-04/10-00-00 120 --by qtype  # per value of run.strata
    harness label outputs/2026-12-04/10-00-00 --width 0.03 --by qtype

The draw is a seeded uniform sample of N of the run's samples (those with retrieved
chunks). With --width W instead of N it is as many as give the PPI++ interval a half-width
of W, worked out from the run's judge scores and the labels it has so far (a labelled
run's human scores: the sheet then holds those samples too, filled in, and draws the rest);
without labels it assumes the judge does not help and says so. With --by COLUMN (the
run's run.strata) the N are shared among the column's values in proportion to their samples,
at least 2 each, and drawn uniformly within each; with --width too, the total is the
smallest so shared that gives the stratified interval that half-width. The sheet (``labels.csv``
and ``labels.jsonl``, one row per retrieved chunk with an empty ``relevant`` column) and the
draw (``draw.json``: seed and drawn ids) go into the out folder, which must not hold a sheet
already. Texts the run cut (``run.row_text_chars``) are taken whole from its dataset's
corpus where there is one. Fill in ``relevant`` (0 or 1) and score the run again with
``run.human_labels=`` the filled file. Bad input is one ``error:`` line, exit 2.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any, NoReturn

from harness.cli.signals import stops
from harness.core.errors import ConfigError, HarnessError
from harness.core.redact import redact

#: The out folder when ``--out`` is not given, inside the run folder.
DEFAULT_OUT = "labels"


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as the command's one ``error:`` line (exit 2)."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message}; see {self.prog} --help", file=sys.stderr)
        sys.exit(2)


def _count(text: str) -> int:
    """N: a whole number from 2 (PPI needs at least two labelled samples)."""
    try:
        n = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of samples to draw, e.g. 150, got {text!r}") from None
    if n < 2:
        raise argparse.ArgumentTypeError(
            f"expected at least 2 samples to draw (an interval needs two labelled), got {n}")
    return n


def _width(text: str) -> float:
    """W: a half-width between 0 and 1 (scores lie in [0, 1])."""
    try:
        w = float(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a half-width such as 0.03, got {text!r}") from None
    if not 0 < w < 1:
        raise argparse.ArgumentTypeError(
            f"expected a half-width above 0 and below 1 (scores lie in [0, 1]), got {text}")
    return w


def _seed(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def parser(prog: str) -> argparse.ArgumentParser:
    """The command's arguments."""
    p = _Parser(prog=prog, description=(__doc__ or "").splitlines()[0],
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog="\n".join((__doc__ or "").splitlines()[2:]))
    p.add_argument("run_dir", metavar="RUN_DIR", help="a finished run's output folder "
                   "(it holds samples.jsonl)")
    p.add_argument("n", metavar="N", type=_count, nargs="?",
                   help="how many samples to draw (from 2); or give --width")
    p.add_argument("--width", type=_width, default=None, metavar="W",
                   help="draw as many as give the interval a half-width of W (e.g. 0.03)")
    p.add_argument("--by", default=None, metavar="COLUMN",
                   help="draw within each value of the run's run.strata column (N, or the "
                   "number --width needs, shared in proportion, at least 2 each)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the draw (default 0)")
    p.add_argument("--out", default=None, help=f"folder for the sheet (default "
                   f"RUN_DIR/{DEFAULT_OUT}); refused when it already holds a sheet")
    return p


def main(argv: list[str] | None = None, prog: str = "harness label") -> int:
    """Run the command; the exit code (0 written, 2 bad input, 128 + a signal's number)."""
    p = parser(prog)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if (args.n is None) == (args.width is None):
        p.error("give N (how many samples to draw) or --width W (a half-width), not "
                + ("both" if args.n is not None else "neither"))
    with stops("harness label", "no sheet was written"):
        try:
            if args.width is not None:
                return write_width(Path(args.run_dir), args.width, args.seed, args.out,
                                   args.by)
            return write(Path(args.run_dir), args.n, args.seed, args.out, args.by)
        except HarnessError as e:
            print(f"error: {redact(str(e))}", file=sys.stderr)
            return 2
        except OSError as e:  # a folder that cannot be read, a sheet that cannot be written
            where = f" {e.filename}" if e.filename else ""
            print(f"error: cannot read or write{where} ({e.strerror or e})", file=sys.stderr)
            return 2
    return 130  # not reached: stops exits; for the type checker


def write(run_dir: Path, n: int, seed: int, out: str | None, by: str | None = None) -> int:
    """Check the run folder, write the sheet and say what to do next; the exit code."""
    from harness.confidence.sheet import draw_sheet

    folder = _free_folder(run_dir, out)
    sheet = draw_sheet(run_dir, n, seed, by=by)
    return _write(run_dir, folder, sheet, f"drew {n}" + _drawn_by(sheet, by))


def write_width(run_dir: Path, width: float, seed: int, out: str | None,
                by: str | None = None) -> int:
    """Work out how many labelled samples give a half-width of ``width`` (shared among the
    values of ``by``), say so, and draw the ones still missing; the exit code."""
    from harness.confidence.plan import run_plan, run_strata_plan
    from harness.confidence.sheet import draw_sheet, row_strata, run_rows, sheet_rows

    folder = _free_folder(run_dir, out)
    rows = list(run_rows(run_dir))
    level = _level(run_dir)
    by_id = {str(r["id"]): r for r in rows}
    counts: dict[str, int] | None = None
    if by is None:
        got: Any = run_plan(rows, width, level)
        said = _plan_line(got.plan, got.variant)
    else:
        strata = row_strata(by_id, list(by_id), by, run_dir)
        got = run_strata_plan(rows, width, by, strata, level)
        said = _strata_line(got.plan, got.variant)
        counts = got.plan.counts()
    p = got.plan
    if p.needed is None:
        raise ConfigError(f"label: {said}")
    print(said)
    if p.more == 0:
        print(f"the {p.labelled} labelled so far give about ±{width:g} already: nothing to draw")
        return 0
    carried = {k: v for k, v in got.carried.items()
               if k in by_id and len(sheet_rows(by_id[k])) == len(v)}
    sheet = draw_sheet(run_dir, p.more or 0, seed, rows=rows, carried=carried, by=by,
                       counts=counts)
    more = f"drew {p.more}" + (" more" if carried else "") + _drawn_by(sheet, by)
    return _write(run_dir, folder, sheet, more, carried=len(carried))


def _drawn_by(sheet: Any, by: str | None) -> str:
    """`` by COLUMN (value drawn of population, ...)``: what a draw by stratum took."""
    if by is None:
        return ""
    return f" by {by} (" + ", ".join(
        f"{v} {c['drawn']} of {c['population']}" for v, c in sheet.record["strata"].items()
    ) + ")"


def _strata_line(p: Any, variant: str | None) -> str:
    """What a stratified plan says: the labels for the half-width, shared among the values."""
    from harness.confidence.plan import MIN_PAIRS

    head = (f"±{p.width:g} at {p.level:.0%}{f' ({variant})' if variant else ''} by "
            f"{p.column}: ")
    if p.needed is None:
        return (head + f"needs more labelled samples than the run's {p.total:,} scored "
                "samples; ask for a wider interval, or score more samples")
    flat = (f"{p.unstratified:,} unstratified" if p.unstratified is not None
            else "unstratified: more than the run has")
    shares = ", ".join(f"{s.value} {s.target:,} of {s.total:,}" for s in p.shares[:12])
    if len(p.shares) > 12:
        shares += f", and {len(p.shares) - 12} more values"
    own = sum(s.from_labels for s in p.shares)
    if own == len(p.shares):
        how = ("planned from each value's labels so far (their spread taken at its 90 % upper "
               "bound)")
    else:
        how = (f"{len(p.shares) - own} of the {len(p.shares)} values have fewer than "
               f"{MIN_PAIRS} labels so far: for them the human scores are assumed to spread as "
               "the judge's and the judge not to help (a pilot by value tells better: harness "
               f"label RUN_DIR 30 --by {p.column})")
    return head + f"{p.needed:,} labelled samples ({flat}): {shares}; {how}"


def _plan_line(p: Any, variant: str | None) -> str:
    """What the plan says: the labels for the half-width, against the labels alone."""
    from harness.confidence.plan import MIN_PAIRS

    head = f"±{p.width:g} at {p.level:.0%}{f' ({variant})' if variant else ''}: "
    alone = (f"the labels alone: {p.labels_alone:,}" if p.labels_alone is not None
             else "the labels alone: more than the run has")
    if p.needed is None:
        return (head + f"needs more labelled samples than the run's {p.total:,} scored "
                "samples; ask for a wider interval, or score more samples")
    if p.from_labels:
        corr = "n/a" if p.correlation is None else f"{p.correlation:.2f}"
        return (head + f"{p.needed:,} labelled samples ({alone}), planned from the "
                f"{p.labelled:,} labelled so far (human sd {p.sd_human:.2f}, judge-human "
                f"correlation {corr}; their spread taken at its 90 % upper bound)")
    why = ("no labels yet" if not p.labelled else
           f"{p.labelled} labelled so far, too few to measure that ({MIN_PAIRS} needed)")
    return (head + f"{p.needed:,} labelled samples, assuming the human scores spread as the "
            f"judge's (sd {p.sd_human:.2f}) and the judge does not help: {why}, so this is "
            "the labels-alone number. A pilot tells better: label 30 (harness label RUN_DIR "
            "30), rerun with them, then ask for the width again")


def _level(run_dir: Path) -> float:
    """The run's ``run.confidence_level`` (its ``config.yaml``), else 0.95."""
    from harness.confidence.sheet import run_setting

    level = run_setting(run_dir, "confidence_level")
    ok = isinstance(level, int | float) and not isinstance(level, bool) and 0 < level < 1
    return float(level) if ok else 0.95


def _free_folder(run_dir: Path, out: str | None) -> Path:
    """The sheet's folder, refused early (before the run is read) when it holds a sheet;
    ``write_sheet`` checks for good when it writes."""
    from harness.confidence.sheet import refuse_taken, taken

    folder = _folder(run_dir, out)
    before = taken(folder)
    if before is not None:
        raise refuse_taken(before)
    return folder


def _write(run_dir: Path, folder: Path, sheet: Any, drew: str, carried: int = 0) -> int:
    """Fill the cut texts, write the sheet and say what to do next; the exit code."""
    from harness.cli.label_texts import fill_cut_texts
    from harness.confidence.sheet import write_sheet

    filled = fill_cut_texts(sheet, run_dir)
    paths = write_sheet(folder, sheet)
    record = sheet.record
    seed = record["seed"]
    pool = record["population"] - carried
    print(f"{drew} of {pool} {'unlabelled ' if carried else ''}samples (seed {seed}): "
          f"{record['chunks']} chunks to label"
          + (f", the {carried} labelled so far in the sheet too, filled in" if carried else ""))
    print(f"  sheet  {paths['csv']}")
    print(f"         {paths['jsonl']} (the same rows, as JSON lines)")
    print(f"  draw   {paths['draw']}")
    if filled:
        print(f"  texts  {filled} chunk texts the run had cut, taken whole from its dataset's "
              "corpus")
    if record["texts_cut"]:
        print(f"note: {record['texts_cut']} of the {record['chunks']} chunk texts are cut "
              "(they end in …: the run kept run.row_text_chars characters); rows still match "
              "by context_id and rank, but to read whole texts rerun with "
              "run.row_text_chars=null and draw again", file=sys.stderr)
    print("next: fill in the relevant column (1 relevant, 0 not) of one of the two files, then")
    print(f"  python -m harness {_overrides(run_dir)}run.human_labels="
          f"{shlex.quote(str(paths['csv']))}")
    return 0


def _folder(run_dir: Path, out: str | None) -> Path:
    """The sheet's folder: ``--out``, or ``RUN_DIR/labels``; refused when it is a file or a
    symbolic link that points nowhere."""
    if not run_dir.is_dir():
        what = "is a file" if run_dir.exists() else "does not exist"
        raise ConfigError(f"label: the run folder {run_dir} {what}; name a finished run's "
                          "output folder (it holds samples.jsonl)")
    folder = run_dir / DEFAULT_OUT if out is None else Path(out).expanduser()
    named = "--out " if out is not None else "the sheet's folder "
    if folder.is_symlink() and not folder.exists():
        raise ConfigError(f"label: {named}{folder} is a symbolic link that points nowhere; "
                          "name a folder for the sheet")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"label: {named}{folder} is a file; name a folder for the sheet")
    return folder


def _overrides(run_dir: Path) -> str:
    """The run's own overrides (from ``.hydra/overrides.yaml``), so the next command scores
    the same run; empty when the folder does not record them."""
    import yaml

    path = run_dir / ".hydra" / "overrides.yaml"
    try:
        items = yaml.safe_load(path.read_text("utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return ""
    if not isinstance(items, list):
        return ""
    keep = [str(i) for i in items if not str(i).startswith(("hydra.", "run.human_labels="))]
    return "".join(shlex.quote(k) + " " for k in keep)
