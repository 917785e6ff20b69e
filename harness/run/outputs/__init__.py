"""A run's outputs: its folder (``folder``), files written whole (``files``), the streamed
rows (``rows``) and the writers every task hands its results to (``writers``)."""

from harness.run.outputs.files import write_json, write_text
from harness.run.outputs.folder import (
    FAILED,
    OUTPUTS,
    RUNNING,
    OutputError,
    check_folder,
    claim,
    failed_jobs,
    release,
)
from harness.run.outputs.rows import (
    finalise,
    json_line,
    json_lines,
    partial_of,
    streamed,
    strip_keys,
)

__all__ = [
    "FAILED", "OUTPUTS", "RUNNING", "OutputError", "check_folder", "claim", "failed_jobs",
    "finalise", "json_line", "json_lines", "partial_of", "release", "streamed", "strip_keys",
    "write_json", "write_text",
]
