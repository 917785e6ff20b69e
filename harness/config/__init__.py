"""The config boundary: composing Hydra configs (``compose``) and building a job's parts
from them (``build``); below it, nothing sees a ``DictConfig``."""
