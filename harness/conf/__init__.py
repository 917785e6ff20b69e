"""The package's configs (Hydra's primary config source, ``pkg://harness.conf``): one folder
per config group. The repository's top-level ``conf`` is a link to this folder."""
