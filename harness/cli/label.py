"""Draw the samples to label from a finished run: ``harness label RUN_DIR N``.

    harness label outputs/2026-12-04/10-00-00 150             # seed 0, sheet in RUN_DIR/labels
    harness label outputs/2026-12-04/10-00-00 150 --seed 7 --out sheets/dl19

The draw is a seeded uniform sample of N of the run's samples (those with retrieved
chunks); the sheet (``labels.csv`` and ``labels.jsonl``, one row per retrieved chunk with an
empty ``relevant`` column) and the draw (``draw.json``: seed and drawn ids) go into the out
folder, which must not hold a sheet already. Texts the run cut (``run.row_text_chars``) are
taken whole from its dataset's corpus where there is one. Fill in
``relevant`` (0 or 1) and score the run again with ``run.human_labels=`` the filled file.
Bad input is one ``error:`` line, exit 2.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import NoReturn

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
    p.add_argument("n", metavar="N", type=_count, help="how many samples to draw (from 2)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the draw (default 0)")
    p.add_argument("--out", default=None, help=f"folder for the sheet (default "
                   f"RUN_DIR/{DEFAULT_OUT}); refused when it already holds a sheet")
    return p


def main(argv: list[str] | None = None, prog: str = "harness label") -> int:
    """Run the command; the exit code (0 written, 2 bad input, 128 + a signal's number)."""
    args = parser(prog).parse_args(sys.argv[1:] if argv is None else argv)
    with stops("harness label", "no sheet was written"):
        try:
            return write(Path(args.run_dir), args.n, args.seed, args.out)
        except HarnessError as e:
            print(f"error: {redact(str(e))}", file=sys.stderr)
            return 2
        except OSError as e:  # a folder that cannot be read, a sheet that cannot be written
            where = f" {e.filename}" if e.filename else ""
            print(f"error: cannot read or write{where} ({e.strerror or e})", file=sys.stderr)
            return 2
    return 130  # not reached: stops exits; for the type checker


def write(run_dir: Path, n: int, seed: int, out: str | None) -> int:
    """Check the run folder, write the sheet and say what to do next; the exit code."""
    from harness.cli.label_texts import fill_cut_texts
    from harness.confidence.sheet import draw_sheet, refuse_taken, taken, write_sheet

    folder = _folder(run_dir, out)
    before = taken(folder)  # early, before reading the run; write_sheet checks for good
    if before is not None:
        raise refuse_taken(before)
    sheet = draw_sheet(run_dir, n, seed)
    filled = fill_cut_texts(sheet, run_dir)
    paths = write_sheet(folder, sheet)
    record = sheet.record
    print(f"drew {n} of {record['population']} samples (seed {seed}): "
          f"{record['chunks']} chunks to label")
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
