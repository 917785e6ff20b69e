"""The verdicts written back to where the samples came from (``dataset=mlflow_traces
dataset.feedback=true``: assessments on the traces), as one of ``task=evaluate``'s writers."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.redact import redact
from harness.core.summary import RunSummary
from harness.run.outputs.folder import OutputError
from harness.run.outputs.writers import Finished


class Feedback:
    """Writes nothing to the output folder: the verdicts go back to the dataset's source."""

    def write(self, done: Finished) -> list[Path]:
        traced = done.dataset.traced
        if traced is None or not isinstance(done.summary, RunSummary):
            return []
        try:
            note = traced.write_feedback(done.rows, str(done.summary.metric))
        except HarnessError as e:
            raise OutputError(f"the verdicts were not written back: {redact(str(e))}; "
                              f"{done.rows} and the files before it are kept") from None
        if note:
            print(f"note: {note}", file=sys.stderr)
        return []
