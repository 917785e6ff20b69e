"""What to set when the records lack a field a metric needs, by the kind of dataset.

The line of a run that scored nothing, and of a judged run refused before its first call,
names the setting that can give the field: a column mapping (``dataset.fields.F=COLUMN``)
only for data read column by column (JSONL, JSON, CSV, Parquet, in-memory records); the
answers file, the query texts or the documents of the datasets that take them (BEIR,
ir_datasets, TREC runs); a retriever for retrieved lists a dataset with a corpus does not
bring; else another metric. Never a setting the dataset does not have.
"""

from __future__ import annotations

#: Datasets read column by column: ``dataset.fields`` maps their columns.
COLUMNS = frozenset({"jsonl", "json", "csv", "parquet", "file", "records"})
#: Datasets of queries, judgments and a corpus, with optional reference answers.
COLLECTIONS = frozenset({"beir", "ir_datasets"})
RETRIEVED = ("retrieved_context_ids", "retrieved_contexts")
_TEXTS = ("retrieved_contexts", "reference_contexts")
_ANSWERS = 'give reference answers with dataset.answers=FILE (JSONL of {"query_id", "answer"})'


def field_fix(kind: str | None, field: str, corpus: bool = False) -> str:
    """What to do about ``field``, missing from every record of a dataset of format
    ``kind`` (its ``describe()["format"]``); ``corpus``: it has documents
    (``dataset.corpus``)."""
    if kind in COLUMNS:
        fix = f"map the column that holds it with dataset.fields.{field}=COLUMN"
        if field in _TEXTS and not corpus:
            fix += " (or, when the records name them by id, give the documents with "
            fix += "dataset.corpus=FILE)"
        elif field == "retrieved_context_ids" and not corpus:
            fix += ", or give documents to search with dataset.corpus=FILE and a retriever "
            fix += "(retriever=bm25)"
        return fix
    if field == "reference" and (kind in COLLECTIONS or kind == "trec"):
        return _ANSWERS
    if kind == "trec" and field == "user_input":
        return "give the query texts with dataset.queries=FILE"
    if kind == "trec" and field in _TEXTS:
        return "give the documents' texts with dataset.corpus=FILE"
    if kind in COLLECTIONS and field in RETRIEVED:
        return "choose a retriever that searches its corpus, e.g. retriever=bm25"
    return (f"dataset {kind or 'of this kind'} has no {field} to give: choose a metric that "
            "does not need it, or a dataset that has it")


def corpus_fix(kind: str | None) -> str:
    """What gives a corpus retriever documents to search, for a dataset of format ``kind``
    that has none: ``dataset.corpus`` where it takes one, else a dataset that has them."""
    if kind in COLUMNS or kind == "trec":
        return ("give your documents with dataset.corpus=FILE (JSONL, Parquet or CSV: _id or "
                "id, text), or retriever=precomputed to score the retrieved lists it holds")
    return (f"dataset {kind or 'of this kind'} takes no documents: choose one that has them "
            "(dataset=scifact_mini, bundled; dataset=beir dataset.path=DIR; dataset=jsonl "
            "dataset.path=FILE dataset.corpus=DOCS), or retriever=precomputed")
