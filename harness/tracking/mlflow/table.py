"""What a reader of a run opens in MLflow beside its numbers: the per-sample evaluation
table (``eval/samples.json``, MLflow's ``log_table`` format) and the dataset as an input.

Both are read from files the run has already written (``samples.jsonl``, ``summary.json``),
in the process that logs the run. Importing this module imports nothing from MLflow.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from harness.core.redact import redact
from harness.core.text import clip
from harness.core.types import RunRecord

#: The table's artifact path (MLflow's "Evaluation"/artifact views list it as a table).
TABLE_FILE = "eval/samples.json"
#: Rows kept in the table (the first ones; ``samples.jsonl`` keeps them all).
TABLE_ROWS = 1000
#: Characters kept of the question, of each chunk's text and of a reason or an error.
CELL_CHARS = 200
#: Chunks kept per row (the top-ranked ones).
TABLE_CHUNKS = 20
#: Dataset options named after a file format: the dataset is then named after its file.
_FORMATS = {"jsonl", "json", "csv", "parquet", "beir"}
#: MLflow keeps a dataset digest in a 36-character column: the sha256 is shortened there
#: (and kept whole in the profile and the ``dataset.sha256`` tag).
DIGEST_CHARS = 16


def _trim(value: Any) -> Any:
    return clip(value, CELL_CHARS) if isinstance(value, str) else value


def _chunks(row: dict[str, Any]) -> list[str]:
    """Each ranked chunk's text (its id where the run had no text), trimmed."""
    chunks = row.get("chunks")
    if isinstance(chunks, list):
        return [str(_trim(c.get("text", c.get("id", "")))) for c in chunks[:TABLE_CHUNKS]
                if isinstance(c, dict)]
    ids = row.get("retrieved_context_ids") or []
    return [str(i) for i in ids[:TABLE_CHUNKS]]


def table_row(row: dict[str, Any]) -> list[Any]:
    """One ``samples.jsonl`` row as a table row (the order of ``COLUMNS``)."""
    reason = row.get("reason")
    if reason is None and isinstance(row.get("reasons"), list):
        reason = " | ".join(f"{i + 1}: {r}" for i, r in enumerate(row["reasons"]) if r)
    verdicts = row.get("verdicts")
    return [
        str(row.get("id", "")),
        _trim(row.get("question")),
        _chunks(row),
        verdicts[:TABLE_CHUNKS] if isinstance(verdicts, list) else verdicts,
        _trim(reason or None),
        row.get("score"),
        _trim(row.get("error")),
    ]


COLUMNS = ["id", "question", "chunks", "verdicts", "reason", "score", "error"]


def read_table(rows_path: Path) -> tuple[dict[str, Any], int]:
    """The table of ``rows_path`` in MLflow's split form (``{"columns", "data"}``), and the
    number of rows the file holds (the table keeps ``TABLE_ROWS`` of them)."""
    data: list[list[Any]] = []
    total = 0
    with open(rows_path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            total += 1
            if len(data) < TABLE_ROWS:
                data.append(table_row(json.loads(line)))
    return {"columns": COLUMNS, "data": data}, total


def _artifact(record_artifacts: list[str], name: str) -> Path | None:
    return next((Path(p) for p in record_artifacts if Path(p).name == name), None)


def log_table(c: Any, run_id: str, artifacts: list[str]) -> dict[str, str]:
    """Log the run's per-sample table; return the tags that make MLflow show it as one."""
    rows = _artifact(artifacts, "samples.jsonl")
    if rows is None or not rows.is_file():
        return {}
    table, total = read_table(rows)
    with tempfile.TemporaryDirectory(prefix="harness-table-") as tmp:
        path = Path(tmp) / Path(TABLE_FILE).name
        path.write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
        c.log_artifact(run_id, str(path), str(Path(TABLE_FILE).parent))
    kept = len(table["data"])
    return {
        "mlflow.loggedArtifacts": json.dumps([{"path": TABLE_FILE, "type": "table"}]),
        "harness.eval_table": f"{kept} of {total} rows" + (
            f" (the first {kept}; all are in samples.jsonl)" if kept < total else ""
        ),
    }


def dataset_of(summary: dict[str, Any]) -> dict[str, Any] | None:
    """Name, digest, source and profile of the run's dataset, from its ``summary.json``."""
    described = summary.get("dataset")
    if not isinstance(described, dict) or not described.get("sha256"):
        return None
    path = str(described.get("path") or "")
    option = str((summary.get("options") or {}).get("dataset") or "")
    name = option if option and option not in _FORMATS else (Path(path).name or option)
    sha = str(described["sha256"])
    profile = {"sha256": sha, "num_rows": summary.get("n_samples")}
    if described.get("split"):
        profile["split"] = described["split"]
    return {
        "name": name or "dataset",
        "digest": sha[:DIGEST_CHARS],
        "source_type": "local",
        "source": json.dumps({"uri": path}),
        "profile": json.dumps(profile),
    }


def log_dataset(c: Any, run_id: str, artifacts: list[str]) -> None:
    """Log the run's dataset as an MLflow dataset input (context ``evaluation``)."""
    summary_path = _artifact(artifacts, "summary.json")
    if summary_path is None or not summary_path.is_file():
        return
    found = dataset_of(json.loads(summary_path.read_text("utf-8")))
    if found is None:
        return
    from mlflow.entities import Dataset, DatasetInput, InputTag

    tag = InputTag("mlflow.data.context", "evaluation")
    c.log_inputs(run_id, datasets=[DatasetInput(Dataset(**found), tags=[tag])])


def reader_views(c: Any, run_id: str, record: RunRecord) -> dict[str, str]:
    """Log the per-sample table and the dataset input (best effort: the run's numbers and
    files are logged already); return the tags that go with them."""
    try:
        tags = log_table(c, run_id, record.artifacts)
        log_dataset(c, run_id, record.artifacts)
    except Exception as e:  # MLflow raises many types; the run stands without them
        lines = [x.strip() for x in str(e).splitlines() if x.strip()]
        why = clip(lines[0] if lines else type(e).__name__, 300)
        return {"harness.eval_table": redact(f"not logged: {why}")}
    return tags
