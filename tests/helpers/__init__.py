"""Test helpers: paths and labels of the bundled data, and running the CLI."""
