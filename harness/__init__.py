"""harness: measure how well a RAG retriever ranks relevant chunks (context precision).

``from harness import evaluate`` is the Python API. Importing the package does nothing
else: heavy libraries (mlflow, openai, rapidfuzz, hydra) load when they are used.
"""

# harness.core first: it takes the working folder off sys.path before any other import
import harness.core  # noqa: F401, I001
from typing import Any

from harness.core import old_paths

__version__ = "0.2.0.dev0"
old_paths.install()  # the modules that moved in 0.2.0 answer to their old paths until 0.3.0
__all__ = ["EvaluationResult", "__version__", "aevaluate", "evaluate"]


def __getattr__(name: str) -> Any:
    if name in ("evaluate", "aevaluate", "EvaluationResult"):
        from harness import api

        return getattr(api, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
