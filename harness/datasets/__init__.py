"""Dataset loaders: JSONL and CSV files with ragas field names, and the bundled sample."""
