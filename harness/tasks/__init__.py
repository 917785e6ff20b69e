"""Tasks: what a job does with its parts (the ``task`` config group)."""
