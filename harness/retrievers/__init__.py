"""Retrievers: where the ranked chunks that get scored come from."""
