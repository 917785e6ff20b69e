"""The command line of ``harness report`` (also ``python -m harness.report`` until 0.3.0)."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from harness.cli.signals import stops
from harness.core.errors import HarnessError, TrackingError
from harness.core.redact import redact

USAGE = """usage: python -m harness.report RUN_DIR|SWEEP_DIR|RUN_ID [tracking_uri=URI] [out=FILE]

Write the report.html of a run (its output folder), of a sweep (its multirun folder), or of
an MLflow run (RUN_ID: read from the store at tracking_uri=, else $MLFLOW_TRACKING_URI, else
sqlite:///mlflow.db; written to out=, default ./report_RUN_ID.html)."""
RUN_ID = re.compile(r"[0-9a-f]{32}")


def main(argv: list[str] | None = None, prog: str = "python -m harness.report") -> int:
    """Run the command; the exit code (0 written, 2 bad input)."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(USAGE.replace("python -m harness.report", prog))
        return 0
    if not args or not Path(args[0]).exists() and (
            args[0].startswith("-") or "=" in args[0].partition("/")[0]):
        given = f"got {args[0]!r}; " if args else ""
        print(f"error: {given}give a run folder, a sweep folder or an MLflow run id first: "
              f"{prog} RUN_DIR|SWEEP_DIR|RUN_ID [tracking_uri=URI] [out=FILE] "
              "(--help says more)", file=sys.stderr)
        return 2
    options = dict(a.partition("=")[::2] for a in args[1:])
    unknown = sorted(set(options) - {"tracking_uri", "out"})
    with stops("harness.report", "the report was not written"):
        try:
            if unknown:
                raise HarnessError(f"unknown option {unknown[0]}= (known: tracking_uri=, out=)")
            out = check_out(options["out"]) if "out" in options else None
            path = write(args[0], out, options.get("tracking_uri"))
        except HarnessError as e:
            print(f"error: {redact(str(e))}", file=sys.stderr)
            return 2
        except OSError as e:  # a folder that cannot be read, a file that cannot be written
            where = f" {e.filename}" if e.filename else ""
            print(f"error: cannot read or write{where} ({e.strerror or e})", file=sys.stderr)
            return 2
        except Exception as e:  # the store's (a missing driver, MLflow's own): one line
            lines = str(e).strip().splitlines()
            print(f"error: {type(e).__name__}: {redact(lines[0] if lines else '')}",
                  file=sys.stderr)
            return 2
    print(f"wrote {path}")
    return 0


def check_out(value: str) -> Path:
    """``out=``: a new file, or an earlier HTML report, in a folder that exists; checked
    before any work (``HarnessError`` otherwise): never a folder, never another file."""
    if not value.strip():
        raise HarnessError("out= is empty: give the report's file name, e.g. out=report.html")
    out = Path(value).expanduser()
    if out.is_dir():
        raise HarnessError(f"out={value} is a folder; give the report's file name, e.g. "
                           f"out={out / 'report.html'}")
    if not out.parent.is_dir():
        raise HarnessError(f"out={value}: the folder {out.parent} does not exist; create it "
                           "or write elsewhere")
    if out.exists() and out.suffix.lower() not in (".html", ".htm"):
        raise HarnessError(f"out={value} exists and is not an HTML report; the report would "
                           "overwrite it: give a new file name ending in .html")
    return out


def write(target: str, out: Path | None, tracking_uri: str | None) -> Path:
    """Write the report of ``target`` (a folder or an MLflow run id); return its path."""
    from harness.report.sweep import write_sweep_report
    from harness.report.write import rebuild_run

    folder = Path(target)
    if folder.is_dir():
        if (folder / "summary.json").is_file():
            return rebuild_run(folder, out)
        return write_sweep_report(folder, out)
    if not RUN_ID.fullmatch(target):
        raise HarnessError(f"{target} is neither a folder nor an MLflow run id (32 hex digits)")
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"
    return from_store(target, uri, out or Path(f"report_{target}.html"))


def from_store(run_id: str, uri: str, out: Path) -> Path:
    """The report of MLflow run ``run_id``, from its logged ``summary.json`` and
    ``samples.jsonl`` (a sweep's parent: from its sweep folder, if it is still here)."""
    from harness.core.redact import redact_uri
    from harness.report.sweep import write_sweep_report
    from harness.report.write import rebuild_run
    from harness.tracking.mlflow.sqlite_uri import local_file
    from harness.tracking.mlflow.store import client

    if (db := local_file(uri)) is not None and not db.is_file():
        raise TrackingError(f"no MLflow store at {uri} (set tracking_uri= or $MLFLOW_TRACKING_URI)")
    c = client(uri)
    try:
        run = c.get_run(run_id)
    except Exception:  # MLflow raises several types for an unknown id
        raise TrackingError(f"no run {run_id} in {redact_uri(uri)}") from None
    if run.data.tags.get("harness.sweep") == "parent":
        sweep_dir = Path(run.data.tags.get("hydra.sweep_dir", ""))
        if not sweep_dir.is_dir():
            raise TrackingError(f"run {run_id} is a sweep's parent; its folder {sweep_dir} "
                                "is not here (run the command where the sweep ran)")
        return write_sweep_report(sweep_dir, out)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    with tempfile.TemporaryDirectory(prefix="harness-report-") as tmp:
        for name in ("summary.json", "samples.jsonl"):
            try:
                c.download_artifacts(run_id, name, tmp)
            except Exception as e:  # MLflow raises many types; report them as one
                raise TrackingError(f"run {run_id} has no artifact {name} ({e})") from None
        return rebuild_run(Path(tmp), out, Path(tmp) / "plots")
