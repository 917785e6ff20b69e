"""The one boundary around code a run calls but the harness did not write, applied by every
room that calls it (``run``, ``tasks``, ``config``, ``shards``, ``retrievers.search``): a user's
retriever (``search``, ``index``, ``prepare``, ``retrieve_batch``, ``describe``), the
library retriever a user's factory built, a metric's ``score_batch``.

Whatever such code raises (that is not already one of the harness's one-line errors)
becomes a ``ComponentFailed`` naming the component, what was called and the error's type
and message (one line, credentials masked): the run stops with exit 2, the MLflow run is
FAILED and the rows scored so far stay in ``samples.jsonl.partial``. What it returns is
checked before anything else reads it: one sample per sample asked, every retrieved text
and id a ``str`` of valid Unicode (the rule dataset text follows, ``text_problem``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from harness.core.errors import ComponentFailed, ConfigError, HarnessError
from harness.core.redact import redact
from harness.core.text import all_writable, clip, one_line, text_problem
from harness.core.types import RagSample

T = TypeVar("T")
#: The longest value quoted in a line about a wrong answer.
_QUOTE = 80


def error_text(error: BaseException) -> str:
    """``Type: message`` of ``error``, as one line without credentials."""
    message = one_line(redact(str(error)), 240)
    name = type(error).__name__
    return f"{name}: {message}" if message else name


#: The attribute of an exception naming the part it came through first (``running``).
RUNNING = "harness_running"


@contextlib.contextmanager
def running(what: str) -> Iterator[None]:
    """Name ``what`` on any exception that leaves this block (an interruption above all),
    unless a part inside named itself first: the line that says what a signal stopped
    (``harness.cli.signals``) reads it with ``ran``."""
    try:
        yield
    except BaseException as e:
        if ran(e) is None:
            setattr(e, RUNNING, what)
        raise


def ran(error: BaseException) -> str | None:
    """The part ``error`` came through first (``running``), or ``None``."""
    what = vars(error).get(RUNNING) if hasattr(error, "__dict__") else None
    return what if isinstance(what, str) else None


def guarded(component: str, call: str, work: Callable[[], T], *, mid_run: bool = False) -> T:
    """``work()``; an exception it raises (other than the harness's own errors and
    interruptions) as a ``ComponentFailed`` naming ``component`` and ``call``; whatever
    leaves names ``component`` as running (``running``).

    ``mid_run``: the call happens while rows are written, so a ``ConfigError`` it raises
    (an adapter's wrong answer) also stops the run as a failed component, keeping them.
    """
    with running(component):
        return _guarded(component, call, work, mid_run)


def _guarded(component: str, call: str, work: Callable[[], T], mid_run: bool) -> T:
    try:
        return work()
    except ConfigError as e:
        if mid_run:
            raise ComponentFailed(str(e)) from None
        raise
    except HarnessError:
        raise
    except SystemExit as e:  # their sys.exit(0) must not end the run as a success
        raise ComponentFailed(f"{component}: {call} called sys.exit({e.code!r})") from None
    except Exception as e:  # noqa: BLE001 - the boundary: any failure of their code is one line
        raise ComponentFailed(f"{component}: {call} raised {error_text(e)}") from None


def wrong(component: str, call: str, what: str) -> ComponentFailed:
    """The error for an answer of ``component`` that is not what it must be."""
    return ComponentFailed(f"{component}: {call} returned {what}")


def quote(value: Any) -> str:
    """A short, one-line, credential-free ``repr`` of a returned value."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a user's __repr__ may fail too
        text = f"<{type(value).__name__}>"
    return clip(one_line(redact(text), None), _QUOTE)


def check_hits(component: str, results: Any, queries: int) -> None:
    """``results`` must be one list of ``Hit`` per query, each id and text a ``str`` of
    valid Unicode; the first value that is not is named."""
    from harness.core.types import Hit

    call = "search()"
    if not isinstance(results, list):
        raise wrong(component, call, f"{quote(results)}; expected a list of {queries} lists of Hit")
    if len(results) != queries:
        raise wrong(component, call, f"{len(results)} lists for {queries} queries; expected "
                    "one list of Hit per query")
    for n, hits in enumerate(results):
        if not isinstance(hits, list | tuple):
            raise wrong(component, call, f"{quote(hits)} for query {n}; expected a list of Hit")
        for rank, hit in enumerate(hits):
            where = f"query {n}, hit {rank}"
            if not isinstance(hit, Hit):
                raise wrong(component, call, f"{quote(hit)} at {where}; expected a Hit(id, text)")
            _check_text(component, call, where, "id", hit.id)
            _check_text(component, call, where, "text", hit.text)


def check_samples(component: str, asked: Sequence[RagSample], found: Any) -> list[RagSample]:
    """``found`` (what ``retrieve_batch`` returned for ``asked``), checked: one sample per
    sample asked, and each retrieved text and id a ``str`` of valid Unicode."""
    call = "retrieve_batch()"
    if not isinstance(found, list | tuple) or len(found) != len(asked):
        got = f"{len(found)} samples" if isinstance(found, list | tuple) else quote(found)
        raise wrong(component, call, f"{got} for {len(asked)} samples; expected one sample each")
    for sample in found:
        if not isinstance(sample, RagSample):
            raise wrong(component, call, f"{quote(sample)}; expected RagSample")
        where = f"sample {sample.id}"
        for field in ("retrieved_contexts", "retrieved_context_ids"):
            values = getattr(sample, field)
            if values is None or all_writable(values):
                continue
            if not isinstance(values, list | tuple):
                raise wrong(component, call, f"{field} {quote(values)} for {where}; expected a "
                            "list of str")
            for i, value in enumerate(values):
                _check_text(component, call, f"{where}", f"{field}[{i}]", value)
    return list(found)


def _check_text(component: str, call: str, where: str, field: str, value: Any) -> None:
    if not isinstance(value, str):
        raise wrong(component, call, f"{field} {quote(value)} ({type(value).__name__}) at "
                    f"{where}; expected str")
    problem = text_problem(value)
    if problem is not None:
        raise wrong(component, call, f"{field} at {where} that {problem}")
