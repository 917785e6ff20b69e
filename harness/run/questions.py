"""The questions a searching retriever gets (``bm25``, ``dense``, a user's ``search``), and
the retrieved lists a dataset with a corpus brings when its retriever searches nothing.

A sample without a question (``user_input`` missing or blank) gets an empty retrieval:
nothing was searched for it. When no sample of the first batch has one, the questions are
certainly elsewhere (under a column the harness does not read, e.g. ``query``): the run is
refused before anything is searched, in one line naming the field, the columns the file
has and the mapping that reads them. When only some lack one, the run goes on and says how
many, on stderr, at its end.

A dataset with a corpus and no retrieved lists (``scifact_mini``, a BEIR folder, an
ir_datasets collection, a JSONL file with ``dataset.corpus``) needs a retriever that searches
the corpus: with one that searches nothing (``precomputed``, the default) every sample
would be unscored for want of a retrieved list. Such a run is refused before any work, in
one line naming ``retriever=`` (``check_retrieval``), not scored into "map the column with
dataset.fields.retrieved_context_ids", which no column would cure.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from harness.core.errors import ConfigError, DatasetError
from harness.core.text import clip
from harness.core.types import Corpus, RagSample
from harness.datasets.columns import question_column

FIELD = "user_input"
#: Samples read to tell whether a dataset brings its own retrieved lists.
PEEK = 32


def asked(sample: RagSample) -> bool:
    """Whether ``sample`` has a question to search."""
    return bool(sample.user_input and sample.user_input.strip())


class Questions:
    """Watches the batches a searching retriever is given.

    Args:
        dataset: The run's dataset (its ``source``, ``fields`` and file name the columns).
        retriever: How messages name the retriever (``bm25``).
        quiet: Say nothing at the end (``run.quiet``).
    """

    def __init__(self, dataset: Any, retriever: str, quiet: bool = False) -> None:
        self.dataset, self.retriever, self.quiet = dataset, retriever, quiet
        self.samples = self.without = 0

    def check(self, batch: list[RagSample]) -> list[RagSample]:
        """Count ``batch``'s questions; a ``DatasetError`` when it is the first batch and
        no sample of it has one."""
        missing = sum(1 for s in batch if not asked(s))
        if batch and missing == len(batch) and self.samples == 0:
            raise self.refusal(len(batch))
        self.samples += len(batch)
        self.without += missing
        return batch

    def watch(self, batches: Iterable[list[RagSample]]) -> Iterator[list[RagSample]]:
        """``batches``, each checked; the count said when they are done."""
        for batch in batches:
            yield self.check(batch)
        line = self.warning()
        if line is not None and not self.quiet:
            print(f"warning: {line}", file=sys.stderr, flush=True)

    def warning(self) -> str | None:
        """The line that says how many samples had no question, or ``None``."""
        if not self.without:
            return None
        return (f"{self.without} of {self.samples} samples of {self.dataset.source} have no "
                f"question ({self._field()}) for retriever {self.retriever} to search: "
                "nothing was retrieved for them, and they score as empty retrievals")

    def _field(self) -> str:
        column = self.dataset.fields.get(FIELD, FIELD)
        return FIELD if column == FIELD else f"{FIELD}, read from column {column!r}"

    def refusal(self, count: int) -> DatasetError:
        """The one line that refuses a run with nothing to search."""
        fields = self.dataset.fields
        column = fields.get(FIELD, FIELD)
        record = self.dataset.first_record()
        names = [k for k in record if isinstance(k, str)]
        listed = ", ".join(clip(n, 40) for n in names[:12]) + (", ..." if len(names) > 12 else "")
        seen = f"; its columns are {listed}" if names else ""
        which = f"none of the first {count} records has a" if count > 1 else "its record has no"
        what = f"{which} question for retriever {self.retriever} to search"
        if column != FIELD:
            what += f" (dataset.fields.{FIELD}={column} names a column "
            what += "with no text)" if column in record else "that is not there)"
        elif FIELD in record:
            what += f" (its {FIELD} column holds no text)"
        guess = question_column(record, fields)
        fix = f"dataset.fields.{FIELD}={guess}" if guess else f"dataset.fields.{FIELD}=COLUMN"
        return DatasetError(
            self.dataset.source,
            f"{what}{seen}; map the column that holds the questions with {fix}",
            field=column,
        )


def watcher(parts: Any) -> Questions | None:
    """The watcher of the run's questions, or ``None`` when its retriever searches
    nothing (``precomputed``: the dataset's own retrieval passes through)."""
    retriever = parts.retriever
    if not retriever.searches:
        return None
    return Questions(parts.dataset, retriever.label, parts.settings.quiet)


def watched(parts: Any, batches: Iterable[list[RagSample]]) -> Iterable[list[RagSample]]:
    """``batches`` with their questions watched (``Questions.watch``) when the retriever
    searches."""
    watch = watcher(parts)
    return batches if watch is None else watch.watch(batches)


def check_all(parts: Any, samples: list[RagSample]) -> list[RagSample]:
    """Every sample of the run, read before any work (judged metrics), watched as one
    batch: refused with none asked, the count said with some."""
    return [s for batch in watched(parts, [samples]) for s in batch]


def brings_retrieval(sample: RagSample) -> bool:
    """Whether ``sample`` comes with a retrieved list (ids or texts)."""
    return sample.retrieved_context_ids is not None or sample.retrieved_contexts is not None


def check_retrieval(parts: Any, corpus: Callable[[], Corpus | None]) -> None:
    """A ``ConfigError`` naming ``retriever=`` when the run's retriever searches nothing,
    none of the dataset's first ``PEEK`` samples brings a retrieved list, and the dataset
    has a corpus (``corpus()``, asked only then): no sample could be scored, and a retriever
    that searches the corpus is the fix."""
    if parts.retriever.searches:
        return
    first = list(islice(parts.dataset.samples(parts.settings.limit), PEEK))
    if not first or any(brings_retrieval(s) for s in first):
        return
    documents = corpus()
    if documents is None:
        return  # nothing to search: a run that scores nothing says which column is missing
    kind = parts.retriever.describe().get("kind") or "precomputed"
    read = f"its first {len(first)} samples bring" if len(first) > 1 else "its sample brings"
    count = len(documents.documents)
    raise ConfigError(
        f"dataset {parts.dataset.source} has a corpus to search ({count:,} "
        f"document{'s' if count != 1 else ''}) but no retrieved lists ({read} no "
        f"retrieved_context_ids or retrieved_contexts), and retriever={kind} searches "
        "nothing: choose a retriever that searches the corpus, e.g. retriever=bm25 "
        "(or retriever=dense, hybrid, custom)"
    )
