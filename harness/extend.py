"""The extension API (version ``API_VERSION``): what your own retriever or metric needs, from
one place.

    from harness.extend import Hit, SearchRetriever

A retriever subclasses ``SearchRetriever`` (``search(queries) -> list[list[Hit]]``) or
implements the ``Retriever`` protocol; a metric subclasses ``BaseMetric`` (``score_batch``)
or implements ``Metric``; a sample that cannot be scored is ``unscored(id, reason)``, never
0. These names are stable within an API version: a change that breaks an implementation
raises ``API_VERSION`` and is listed in the CHANGELOG; the modules behind them may move.
"""

from harness.core.errors import ConfigError, DatasetError, HarnessError
from harness.core.protocols import API_VERSION, Metric, OnDone, Retriever
from harness.core.types import Chunk, Corpus, Document, Hit, RagSample, SampleResult, unscored
from harness.metrics.base import BaseMetric, missing_fields
from harness.metrics.ranking import average_precision, set_precision
from harness.retrievers.search import SearchRetriever

__all__ = [
    "API_VERSION",
    "BaseMetric",
    "Chunk",
    "ConfigError",
    "Corpus",
    "DatasetError",
    "Document",
    "HarnessError",
    "Hit",
    "Metric",
    "OnDone",
    "RagSample",
    "Retriever",
    "SampleResult",
    "SearchRetriever",
    "average_precision",
    "missing_fields",
    "set_precision",
    "unscored",
]
