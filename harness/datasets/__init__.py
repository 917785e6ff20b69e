"""Datasets (the ``Dataset`` seam): JSONL, CSV and Parquet files with ragas field names, the
bundled sample, BEIR folders (with a corpus), and records handed over in memory."""
