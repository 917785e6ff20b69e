"""Asserting how a run failed: the exit code, one ``error:`` line, nothing written."""

from __future__ import annotations

from helpers.cli import CliResult


def fails(result: CliResult, *fragments: str, code: int = 2) -> str:
    """Exit ``code`` (2: bad input; 1: the command line does not compose), one ``error:``
    line (no traceback) holding every fragment, no rows and no summary written; the line is
    returned."""
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not (result.out_dir / "samples.jsonl").exists()
    assert not (result.out_dir / "summary.json").exists()
    return lines[0]
