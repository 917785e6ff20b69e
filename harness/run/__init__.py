"""The engine of one job: the scoring loop, its record, outputs, gates and timing; no Hydra,
no CLI."""
