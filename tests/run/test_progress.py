"""The progress bar on stderr: redrawn in place on a terminal; into a file or a pipe (a CI
log, where every redraw is a line of its own) at most one line per half minute, and never
the same final line twice."""

from __future__ import annotations

import io
import sys
import time

import pytest

from harness.core.settings import RunSettings
from harness.run.plan import progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.slow
@pytest.mark.parametrize(("stream", "most"), [(io.StringIO, 1), (Terminal, None)])
def test_a_log_gets_no_duplicate_lines(monkeypatch: pytest.MonkeyPatch, stream: type,
                                       most: int | None) -> None:
    err = stream()
    monkeypatch.setattr(sys, "stderr", err)
    bar, update = progress_bar(RunSettings(), 30)
    assert bar is not None and update is not None
    for _ in range(30):  # 1.5 s of work: past the bar's one-second delay
        time.sleep(0.05)
        update(1)
    bar.close()
    lines = [line for line in err.getvalue().replace("\r", "\n").splitlines() if line.strip()]
    finals = [line for line in lines if "30/30" in line]
    if most is None:  # a terminal: redrawn in place, so several draws, the last one complete
        assert len(lines) >= 2 and finals
    else:
        assert len(lines) <= most and len(finals) <= 1, lines
