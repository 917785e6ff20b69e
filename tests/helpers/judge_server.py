"""The project's test judge: a real OpenAI-compatible HTTP server answering from fixture labels.

It is not a mock of the client: the test suite and the benchmarks talk to it over HTTP on
127.0.0.1 with the real ``openai`` SDK, so retries, timeouts, connection pooling and response
parsing are exercised exactly as against a provider.

In process (pytest)::

    with JudgeServer({"chunk text": 1, ("question", "other chunk"): 0.8}) as judge:
        client = openai.AsyncOpenAI(base_url=judge.base_url, api_key="x")
        ...
        assert judge.stats.ok == 3

As a subprocess (benchmarks)::

    python tests/helpers/judge_server.py --port 0 --labels labels.json --latency-ms 200 \
        --concurrency 64

prints exactly one line ``READY http://127.0.0.1:<port>/v1`` on stdout and serves until SIGTERM or
SIGINT; it then prints ``STATS {json}`` on stderr.

Reading a request: only the LAST message with role ``user`` is read (earlier user/assistant
messages are few-shot examples). Tags, each value on its own lines inside the block:

* ``<question>`` / ``<answer>`` (the answer may be absent);
* pointwise: one ``<context>`` block;
* listwise: a ``<contexts>`` wrapper holding ``<context index="1">`` ... blocks, in order;
* reason request: the message contains ``<verdicts>``; the score is read from ``<score>``.

Exactly one leading and one trailing newline are stripped from each block. Blocks are found
with a non-greedy regular expression, so a chunk may hold any text (braces, quotes, JSON, the
word "verdict") EXCEPT its own closing tag: a chunk containing a literal ``</context>`` is cut
there (a known, accepted limitation).

Labels map a chunk (``str``) or a ``(question, chunk)`` tuple to an int 0/1 or a float
probability of relevance (verdict 1 iff p >= 0.5). Lookup: ``(question, chunk)``, then
``chunk``, else the ``default_label`` knob (counted in ``stats.unknown_chunks``).

It writes what the request's reply schema allows: a schema without a ``reason`` property
gets verdicts without reasons (``asks_reasons``), as a model held to the schema would answer.

It bills like a provider (``helpers.billing``): ``usage.prompt_tokens_details.cached_tokens``
as OpenAI's prompt caching counts them, and ``stats.billed_*`` what every reply cost at the
knobs' prices (Batch API lines at ``batch_price`` times them). It serves OpenAI's Batch API
(``helpers.batch_api``: ``/v1/files``, ``/v1/batches``), each line answered as the chat
endpoint would answer it, with its faults as knobs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import random
import re
import signal
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from aiohttp import web

try:
    from helpers.batch_api import BATCH_OUTCOMES, BatchApi
    from helpers.billing import PrefixCache, Prices, serialized, tokens
except ImportError:  # run as a script: this folder is on sys.path, not its parent
    from batch_api import BATCH_OUTCOMES, BatchApi  # type: ignore[no-redef]
    from billing import PrefixCache, Prices, serialized, tokens  # type: ignore[no-redef]

__all__ = ["KNOB_NAMES", "OUTCOMES", "JudgeServer", "Knobs", "Stats", "load_labels", "main"]

Label = int | float
LabelKey = str | tuple[str, str]

#: Forced outcomes accepted in the ``script`` knob (``400``..``404``: that error status).
OUTCOMES = (
    "ok", "429", "500", "malformed", "hang", "mismatch", "400", "401", "403", "404", "503",
    "quota",
)

#: Shapes of a 200 reply's parts (knobs ``content_shape``, ``usage_shape``, ``logprobs_shape``);
#: the first of each is the well-formed default.
CONTENT_SHAPES = ("text", "parts", "refusal", "null", "length", "object", "error", "html")
USAGE_SHAPES = (
    "ok", "missing", "null", "strings", "floats", "bad_strings", "not_dict", "details_null",
    "details_list", "details_string", "nan", "negative", "bools", "huge",
)
LOGPROBS_SHAPES = (
    "ok", "missing", "null", "list", "string", "content_null", "content_dict", "bad_tokens",
    "nan", "positive", "strings",
    # usable, but the tokens do not spell the content: they keep a code fence the content
    # lacks ("fenced"); the content has whitespace around it the tokens lack, and they a space
    # it lacks ("padded"); a verdict value shares a token with the text before it and is
    # split over two (' "y' + 'es', ' 1' — "split")
    "fenced", "padded", "split",
)
MODELS_ENDPOINT = ("ok", "open", "403", "404", "500")

# --------------------------------------------------------------------------------------------
# Knobs and stats
# --------------------------------------------------------------------------------------------


@dataclass
class Knobs:
    """Run-time behaviour of the judge; every fault is off by default."""

    default_label: Label = 0  # label of a chunk found in no label
    latency_ms: float = 0.0  # sleep before answering (every outcome but hang)
    latency_jitter_ms: float = 0.0  # latency += uniform(-jitter, +jitter), floored at 0
    # latency shapes of real servers (each off at 0): Gaussian jitter of this standard
    # deviation; a log-normal tail (latency_ms the median, p99 this many times it); a slow
    # mode (this share of requests takes slow_ms): output lengths differ, queues come and go
    latency_sd_ms: float = 0.0
    latency_tail: float = 0.0
    slow_ms: float = 0.0
    slow_share: float = 0.0
    # a token-rate limit (tokens per second; 0: none) with a bucket of token_burst (0: one
    # second's worth): a request costs its prompt tokens + max_tokens (64 without), or
    # token_cost; every reply
    # carries x-ratelimit-{limit,remaining,reset}-tokens, a refused one a 429 at once
    token_rate: float = 0.0
    token_burst: float = 0.0
    token_cost: float = 0.0
    # fail_429's 429s answered at once, before a slot (a rate limiter in front of the model)
    quick_429: bool = False
    # a 200 reply's body sent in 8 pieces this many ms apart, after its headers (slow drip)
    drip_ms: float = 0.0
    concurrency: int | None = None  # at most this many requests processed at once; others queue
    hang: float = 0.0  # probability: accept, never answer (sleep hang_seconds, then drop)
    hang_seconds: float = 3600.0
    fail_429: float = 0.0  # probability of a 429 with Retry-After
    retry_after: str | float = "0"  # Retry-After header value (seconds) of a 429
    fail_500: float = 0.0  # probability of a 500
    malformed: float = 0.0  # probability of a 200 whose content is not the expected JSON
    malformed_content: str | None = None  # override the malformed content
    count_mismatch: float = 0.0  # probability (listwise only) of one verdict fewer than chunks
    script: list[str] = field(default_factory=list)  # forced outcomes, consumed one per request
    # response_format types answered with a 400, as endpoints without structured output do
    reject_formats: list[str] = field(default_factory=list)
    # probability that a verdict is flipped, decided by hash(request seed, chunk): a sampling
    # judge whose draws (seed, seed+1, ...) disagree now and then, reproducibly
    flip: float = 0.0
    # error bodies and the reasons of replies quote the request's Authorization header, as
    # some proxies (and a judge that repeats its input) do
    echo_auth: bool = False
    # the models served: /models lists them, a chat request for another one is a 404
    # (model_not_found), as vLLM and Ollama answer; empty: any model is served
    models: list[str] = field(default_factory=list)
    # GET /models: "ok", "open" (answers without checking the key), or that error status
    models_endpoint: str = "ok"
    # shapes of a 200 reply (see CONTENT_SHAPES, USAGE_SHAPES, LOGPROBS_SHAPES): content as
    # a list of parts, null with a refusal, ...; usage and logprobs of odd types
    content_shape: str = "text"
    usage_shape: str = "ok"
    logprobs_shape: str = "ok"
    # unknown fields at every level of a reply (a newer API, a proxy's own fields)
    extra_fields: bool = False
    # a grammar-constrained server: a listwise request whose schema pins the verdict count
    # (minItems = maxItems = chunks) is never answered with a miscount (count_mismatch)
    obey_schema_count: bool = False
    # the ``model`` field of replies (None: the model the request named)
    reply_model: str | None = None
    # llama.cpp's GET /props (model_path, model_alias, total_slots, ...); None: 404
    props: dict[str, Any] | None = None
    # Ollama's GET /api/tags "models" list ({"name", "model", "digest"}); None: 404
    ollama_tags: list[dict[str, Any]] | None = None
    # vLLM's "root" (the weights served) of every /models entry; None: no root field
    model_root: str | None = None
    # the message of every 5xx answer, e.g. a pydantic error over several lines as
    # llama-cpp-python sends (None: the test judge's own one-line messages)
    error_message: str | None = None
    # probability of a 503 with Retry-After (``retry_after``), answered at once, as an
    # overloaded server does; drawn only when > 0, so other knobs' draws keep their sequence
    fail_503: float = 0.0
    # prompt caching (helpers.billing): the tokens a prompt shares with an earlier one are
    # cached from cache_min_tokens on, in steps of cache_step (OpenAI: 1024, 128)
    cache_min_tokens: int = 1024
    cache_step: int = 128
    # the bill: USD per million input, cached input and output tokens; Batch API lines are
    # billed at batch_price times these
    price_input: float = 1.00
    price_cached_input: float = 0.10
    price_output: float = 4.00
    batch_price: float = 0.5
    # the Batch API (helpers.batch_api): served at all (False: 404 on /files and /batches);
    # seconds from a batch's creation to its completion (polls see validating, in_progress,
    # finalizing in between); what becomes of each batch created, in turn (BATCH_OUTCOMES:
    # ok, expire, cancel (by the server), forget (404 on retrieve), fail (validation));
    # the share of an expired or cancelled batch's lines answered before it ended
    batch_api: bool = True
    batch_seconds: float = 0.0
    batch_script: list[str] = field(default_factory=list)
    batch_answered: float = 0.5
    # a share of the lines (chosen by their custom_id) fail with batch_fail_status on their
    # first batch_fail_times submissions (written to the error file, as OpenAI writes them)
    batch_fail_lines: float = 0.0
    batch_fail_times: int = 1
    batch_fail_status: int = 500
    # the next N requests to the batch endpoints are refused: 429 with Retry-After
    # (retry_after) and x-ratelimit-* headers
    batch_429: int = 0
    # OpenAI's limits of one input file: requests (a batch of more fails validation) and
    # bytes (an upload of more is a 400)
    batch_max_lines: int = 50_000
    batch_max_bytes: int = 200 * 2**20


KNOB_NAMES = frozenset(f.name for f in fields(Knobs))
_PROB_KNOBS = ("hang", "fail_429", "fail_500", "malformed", "count_mismatch", "flip")
_OTHER_PROBS = ("fail_503", "slow_share", "batch_answered", "batch_fail_lines")
_COUNT_KNOBS = {"cache_min_tokens": 0, "cache_step": 1, "batch_fail_times": 0, "batch_429": 0,
                "batch_max_lines": 1, "batch_max_bytes": 1}
_SHAPE_KNOBS = {
    "content_shape": CONTENT_SHAPES,
    "usage_shape": USAGE_SHAPES,
    "logprobs_shape": LOGPROBS_SHAPES,
    "models_endpoint": MODELS_ENDPOINT,
}


def _check_knob(name: str, value: Any) -> Any:
    """Validate one knob value; return it normalised."""
    if name not in KNOB_NAMES:
        raise TypeError(f"unknown judge knob {name!r}; known: {sorted(KNOB_NAMES)}")
    if name in _PROB_KNOBS or name in _OTHER_PROBS:
        value = float(value)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"knob {name} is a probability, got {value}")
    elif name == "script":
        value = list(value or [])
        bad = [v for v in value if v not in OUTCOMES]
        if bad:
            raise ValueError(f"script outcomes must be among {OUTCOMES}, got {bad}")
    elif name == "concurrency":
        if value is not None:
            value = int(value)
            if value < 1:
                raise ValueError("concurrency must be >= 1 or None")
    elif name in _COUNT_KNOBS:
        value = int(value)
        if value < _COUNT_KNOBS[name]:
            raise ValueError(f"knob {name} must be >= {_COUNT_KNOBS[name]}")
    elif name == "batch_fail_status":
        value = int(value)
        if not 400 <= value <= 599:
            raise ValueError("knob batch_fail_status is an error status, 400..599")
    elif name == "batch_script":
        value = list(value or [])
        bad = [v for v in value if v not in BATCH_OUTCOMES]
        if bad:
            raise ValueError(f"batch_script outcomes must be among {BATCH_OUTCOMES}, got {bad}")
    elif name in ("latency_ms", "latency_jitter_ms", "hang_seconds", "latency_sd_ms", "slow_ms",
                  "token_rate", "token_burst", "token_cost", "drip_ms", "price_input",
                  "price_cached_input", "price_output", "batch_price", "batch_seconds"):
        value = float(value)
        if value < 0:
            raise ValueError(f"knob {name} must be >= 0")
    elif name == "default_label":
        _label_prob(value)  # raises on a bad label
    elif name == "retry_after":
        value = str(value)
    elif name in ("reject_formats", "models"):
        value = [str(v) for v in (value or [])]
    elif name in _SHAPE_KNOBS:
        value = str(value)
        if value not in _SHAPE_KNOBS[name]:
            raise ValueError(f"knob {name} must be one of {_SHAPE_KNOBS[name]}, got {value!r}")
    elif name == "latency_tail":
        value = float(value)
        if value != 0 and value <= 1:
            raise ValueError("knob latency_tail is p99 / median, > 1 (0: off)")
    elif name in ("echo_auth", "extra_fields", "obey_schema_count", "quick_429", "batch_api"):
        value = bool(value)
    elif name in ("reply_model", "model_root", "error_message"):
        value = None if value is None else str(value)
    elif name == "props":
        value = None if value is None else dict(value)
    elif name == "ollama_tags":
        value = None if value is None else [dict(v) for v in value]
    return value


@dataclass
class Stats:
    """Counters of what the judge did; increments are thread-safe (``incr``).

    ``requests`` counts every chat request; each ends as exactly one of ``ok`` (a clean
    answer), ``malformed``, ``mismatches``, ``status_429``, ``status_500``, ``hangs``,
    ``status_401``, ``status_400`` (unreadable request), ``status_403``, ``status_404`` (scripted,
    or a model not served), ``status_503``, or none of them when the client went
    away before the answer (then counted in ``cancelled``, as llama.cpp cancels the task of a
    client that disconnected, whether it was queued or being processed). ``by_retry_count``
    counts ``x-stainless-retry-count`` header values (as ints when they parse). ``in_flight``
    is the current number of requests being processed (past the concurrency gate),
    ``in_flight_max`` its maximum. ``busy_s`` sums the time requests spent past the gate,
    ``first_enter``/``last_leave`` bound it (monotonic seconds): ``occupancy(slots)`` is the
    share of the slots' time that had work, whatever the machine's speed.

    The bill: ``billed_requests`` replies billed (every chat completion the model wrote,
    whatever its HTTP fate), their ``billed_prompt_tokens``, ``billed_cached_tokens`` and
    ``billed_completion_tokens``, and ``billed_usd`` at the knobs' prices; ``batch_billed_*``
    is the part answered through the Batch API (at the batch price). The Batch API:
    ``files_uploaded``, ``batches_created``, ``batch_lines_submitted`` (lines of the
    batches created), ``batch_lines_answered`` (output file), ``batch_lines_failed`` (error
    file: failed, expired or cancelled), ``batch_polls`` (``GET /batches/{id}``),
    ``batch_refused`` (429s of the batch endpoints).
    """

    requests: int = 0
    ok: int = 0
    status_429: int = 0
    status_500: int = 0
    malformed: int = 0
    hangs: int = 0
    mismatches: int = 0
    unknown_chunks: int = 0
    in_flight_max: int = 0
    status_401: int = 0
    status_400: int = 0
    status_403: int = 0
    status_404: int = 0
    status_503: int = 0
    rate_limited: int = 0  # 429s of the token bucket (also in status_429)
    cancelled: int = 0
    in_flight: int = 0
    busy_s: float = 0.0
    first_enter: float = 0.0
    last_leave: float = 0.0
    billed_requests: int = 0
    billed_prompt_tokens: int = 0
    billed_cached_tokens: int = 0
    billed_completion_tokens: int = 0
    billed_usd: float = 0.0
    batch_billed_requests: int = 0
    batch_billed_prompt_tokens: int = 0
    batch_billed_cached_tokens: int = 0
    batch_billed_completion_tokens: int = 0
    batch_billed_usd: float = 0.0
    files_uploaded: int = 0
    batches_created: int = 0
    batch_lines_submitted: int = 0
    batch_lines_answered: int = 0
    batch_lines_failed: int = 0
    batch_polls: int = 0
    batch_refused: int = 0
    by_retry_count: Counter = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def incr(self, **deltas: float) -> None:
        """Add ``deltas`` to the named counters atomically."""
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def enter(self) -> None:
        """One more request in flight; track the maximum."""
        now = time.monotonic()
        with self._lock:
            self.in_flight += 1
            self.in_flight_max = max(self.in_flight_max, self.in_flight)
            self.busy_s -= now
            self.first_enter = self.first_enter or now

    def leave(self) -> None:
        """One request fewer in flight."""
        now = time.monotonic()
        with self._lock:
            self.in_flight -= 1
            self.busy_s += now
            self.last_leave = now

    def occupancy(self, slots: int) -> float:
        """Busy slot-time over the slots' time from the first request to the last answer."""
        span = self.last_leave - self.first_enter
        return self.busy_s / (slots * span) if span > 0 else 0.0

    def bill(self, prompt: int, cached: int, completion: int, usd: float, batch: bool) -> None:
        """Count one billed reply (``batch``: answered through the Batch API)."""
        self.incr(billed_requests=1, billed_prompt_tokens=prompt, billed_cached_tokens=cached,
                  billed_completion_tokens=completion, billed_usd=usd)
        if batch:
            self.incr(batch_billed_requests=1, batch_billed_prompt_tokens=prompt,
                      batch_billed_cached_tokens=cached, batch_billed_completion_tokens=completion,
                      batch_billed_usd=usd)

    def count_retry(self, value: str) -> None:
        """Count one ``x-stainless-retry-count`` header value."""
        key: int | str
        try:
            key = int(value)
        except ValueError:
            key = value
        with self._lock:
            self.by_retry_count[key] += 1

    def reset(self) -> None:
        """Zero every counter (``in_flight`` keeps its live value, the max restarts from it)."""
        with self._lock:
            for f in fields(self):
                if f.name in ("_lock", "in_flight"):
                    continue
                setattr(self, f.name, Counter() if f.name == "by_retry_count" else 0)
            self.busy_s = -time.monotonic() * self.in_flight  # requests still in flight
            self.in_flight_max = self.in_flight

    def snapshot(self) -> dict[str, Any]:
        """A consistent, JSON-ready copy of the counters."""
        with self._lock:
            out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_lock"}
            out["by_retry_count"] = {str(k): v for k, v in self.by_retry_count.items()}
            return out


# --------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------

_P_INT = {1: 0.97, 0: 0.03}
_P_MIN, _P_MAX = 1e-6, 1 - 1e-6


def _unit(text: str) -> float:
    """A deterministic number in [0, 1) from ``text``."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def _label_prob(label: Any) -> tuple[int, float]:
    """``(verdict, p)`` for a label: int 0/1 -> p 0.97/0.03; float p -> verdict p >= 0.5."""
    if isinstance(label, (bool, int)):
        if int(label) not in (0, 1):
            raise ValueError(f"an int label must be 0 or 1, got {label!r}")
        return int(label), _P_INT[int(label)]
    if isinstance(label, float):
        if not 0.0 <= label <= 1.0 or math.isnan(label):
            raise ValueError(f"a float label is a probability in [0, 1], got {label!r}")
        return int(label >= 0.5), min(max(label, _P_MIN), _P_MAX)
    raise TypeError(f"a label is an int 0/1 or a float probability, got {label!r}")


def load_labels(path: str | Path) -> dict[LabelKey, Label]:
    """Read a labels JSON file: a list of ``{"chunk", "question" (optional), "label"}``.

    A plain ``{chunk: label}`` object is accepted too.
    """
    data = json.loads(Path(path).read_text("utf-8"))
    if isinstance(data, dict):
        return {str(k): v for k, v in data.items()}
    labels: dict[LabelKey, Label] = {}
    for i, item in enumerate(data):
        if not isinstance(item, dict) or "chunk" not in item or "label" not in item:
            raise ValueError(f"{path}: item {i} needs 'chunk' and 'label': {item!r}")
        _label_prob(item["label"])
        key: LabelKey = item["chunk"]
        if item.get("question") is not None:
            key = (item["question"], item["chunk"])
        labels[key] = item["label"]
    return labels


# --------------------------------------------------------------------------------------------
# Prompt parsing
# --------------------------------------------------------------------------------------------

_QUESTION_RE = re.compile(r"<question>(.*?)</question>", re.S)
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.S)
_SCORE_RE = re.compile(r"<score>(.*?)</score>", re.S)
_POINT_RE = re.compile(r"<context>(.*?)</context>", re.S)
_LIST_BLOCK_RE = re.compile(r"<context\s+index=\"?(\d+)\"?\s*>(.*?)</context>", re.S)


def pinned_count(body: Mapping[str, Any]) -> int | None:
    """The verdict count a request's schema pins (minItems = maxItems), else None: the
    json_schema format's, or the ``schema`` beside ``type: json_object`` (llama.cpp's)."""
    fmt = body.get("response_format")
    schema = None
    if isinstance(fmt, dict):
        schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
    verdicts = ((schema or {}).get("properties") or {}).get("verdicts") or {}
    low, high = verdicts.get("minItems"), verdicts.get("maxItems")
    return low if isinstance(low, int) and low == high else None


def asks_reasons(body: Mapping[str, Any]) -> bool:
    """Whether a reply may hold reasons: a request whose reply schema (the json_schema
    format's, or the ``schema`` beside ``type: json_object``) has no ``reason`` property
    anywhere is answered without them, as a model held to the schema (OpenAI's strict mode,
    a grammar-constrained server) writes only what the schema allows; without a schema a
    reply has its reasons."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return True
    given = fmt.get("json_schema")
    schema = given.get("schema") if isinstance(given, dict) else fmt.get("schema")
    return not isinstance(schema, dict) or _has_reason(schema)


def _has_reason(node: Any) -> bool:
    """Whether a JSON schema declares a ``reason`` property at any depth."""
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict) and "reason" in props:
            return True
        return any(_has_reason(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_reason(v) for v in node)
    return False


class BadRequest(Exception):
    """The request cannot be judged (answered with a 400)."""


def _strip_block(text: str) -> str:
    """Drop exactly one leading and one trailing newline."""
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return text


def _content_text(content: Any) -> str:
    """The text of a message content: a string or a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


@dataclass
class Prompt:
    """What the judge read from the last user message."""

    kind: str  # "pointwise" | "listwise" | "reason"
    question: str | None
    answer: str | None
    chunks: list[str]
    score: str | None
    prefix: str  # messages before the last user one + its text before the first "<context"
    prefix_len: int  # characters of content in the prefix
    prompt_chars: int  # characters of all message contents
    seed: Any = None  # the request's sampling seed
    serial: str = ""  # the messages serialized in order (what prompt caching compares)
    roles: list[Any] = field(default_factory=list)  # each message's role and text
    texts: list[str] = field(default_factory=list)


def parse_prompt(body: Mapping[str, Any]) -> Prompt:
    """Read a chat request body as the harness's judge prompt."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    texts = [_content_text(m.get("content") if isinstance(m, dict) else None) for m in messages]
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    last_user = max((i for i, r in enumerate(roles) if r == "user"), default=None)
    if last_user is None:
        raise BadRequest("no message with role 'user'")
    text = texts[last_user]

    def block(rx: re.Pattern[str], s: str) -> str | None:
        m = rx.search(s)
        return _strip_block(m.group(1)) if m else None

    question = block(_QUESTION_RE, text)
    answer = block(_ANSWER_RE, text)
    score = None
    chunks: list[str] = []
    if "<verdicts>" in text:
        kind = "reason"
        score = block(_SCORE_RE, text)
        if score is not None:
            score = score.strip()
    elif "<contexts>" in text:
        kind = "listwise"
        start = text.index("<contexts>") + len("<contexts>")
        end = text.rfind("</contexts>")
        region = text[start:end] if end >= start else text[start:]
        chunks = [_strip_block(m.group(2)) for m in _LIST_BLOCK_RE.finditer(region)]
        if not chunks:
            raise BadRequest('<contexts> holds no <context index="N"> block')
    else:
        kind = "pointwise"
        chunk = block(_POINT_RE, text)
        if chunk is None:
            raise BadRequest("the last user message has no <context>, <contexts> or <verdicts>")
        chunks = [chunk]

    cut = text.find("<context")
    head = text if cut < 0 else text[:cut]
    others = [(roles[i], texts[i]) for i in range(len(messages)) if i != last_user]
    prefix = json.dumps([others, head])
    prefix_len = sum(len(t) for _, t in others) + len(head)
    return Prompt(
        kind, question, answer, chunks, score, prefix, prefix_len, sum(map(len, texts)),
        body.get("seed"), serialized(roles, texts), roles, texts,
    )


# --------------------------------------------------------------------------------------------
# Content and logprobs
# --------------------------------------------------------------------------------------------

# a content is a list of segments: (text, None) or (verdict value, (positive, negative, p))
Segment = tuple[str, "tuple[str, str, float] | None"]
_TEXT_SPLIT_RE = re.compile(r"\s*\w+|\s*[^\w\s]+|\s+")
_TEXT_PREFIX = "Here is my judgement:\n```json\n"
_TEXT_SUFFIX = "\n```\nDone."


def _cut(segments: list[Segment], max_tokens: Any) -> tuple[list[Segment], str]:
    """The segments a reply of at most ``max_tokens`` tokens (4 characters each) keeps, and
    its ``finish_reason``: ``length`` when the limit cut it, as real servers do."""
    if not isinstance(max_tokens, int) or sum(len(t) for t, _ in segments) <= 4 * max_tokens:
        return segments, "stop"
    out: list[Segment] = []
    room = 4 * max(max_tokens, 0)
    for text, info in segments:
        if len(text) > room:
            if room:
                out.append((text[:room], None))
            break
        out.append((text, info))
        room -= len(text)
    return out, "length"


def _merge(segments: list[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for text, info in segments:
        if info is None and out and out[-1][1] is None:
            out[-1] = (out[-1][0] + text, None)
        elif text or info is not None:
            out.append((text, info))
    return out


def _logprobs(segments: list[Segment], top_n: int, split: bool = False) -> dict[str, Any]:
    """OpenAI ``logprobs`` whose tokens concatenate to the content; verdicts are own tokens
    (``split``: a verdict's first letter joins the text token before it, the rest follows)."""
    tokens: list[dict[str, Any]] = []
    for text, info in segments:
        if info is None:
            for piece in _TEXT_SPLIT_RE.findall(text):
                tokens.append(
                    {
                        "token": piece,
                        "logprob": 0.0,
                        "bytes": None,
                        "top_logprobs": [{"token": piece, "logprob": 0.0, "bytes": None}][:top_n],
                    }
                )
            continue
        pos, neg, p = info
        cands = [(pos, math.log(p)), (neg, math.log(1 - p))]
        cands.sort(key=lambda c: -c[1])  # stable: the positive wins a tie (p == 0.5)
        chosen = dict(cands)[text]
        if split:
            head = tokens.pop()["token"] if tokens else ""
            cands = [(head + t[:1], lp) for t, lp in cands]
            tokens.append({"token": head + text[:1], "logprob": chosen, "bytes": None,
                           "top_logprobs": [{"token": t, "logprob": lp, "bytes": None}
                                            for t, lp in cands[:top_n]]})
            if text[1:]:
                rest = {"token": text[1:], "logprob": 0.0, "bytes": None}
                tokens.append({**rest, "top_logprobs": [dict(rest)][:top_n]})
            continue
        tokens.append(
            {
                "token": text,
                "logprob": chosen,
                "bytes": None,
                "top_logprobs": [
                    {"token": t, "logprob": lp, "bytes": None} for t, lp in cands[:top_n]
                ],
            }
        )
    return {"content": tokens, "refusal": None}


# --------------------------------------------------------------------------------------------
# Reply shapes (knobs content_shape, usage_shape, logprobs_shape, extra_fields)
# --------------------------------------------------------------------------------------------

REFUSAL = "I'm sorry, I can't help with that request."


def _reshape(reply: dict[str, Any], knobs: Knobs) -> dict[str, Any]:
    """``reply`` in the shapes the knobs ask for (all well-formed by default)."""
    choice = reply["choices"][0]
    message = choice["message"]
    content = message["content"]
    shape = knobs.content_shape
    if shape == "parts":  # two text parts (and a non-text one) that join to the content
        half = len(content) // 2
        message["content"] = [
            {"type": "text", "text": content[:half]},
            {"type": "image_url", "image_url": {"url": "data:,"}},
            {"type": "text", "text": content[half:]},
        ]
    elif shape == "refusal":
        message.update(content=None, refusal=REFUSAL)
        choice["logprobs"] = None
    elif shape == "null":
        message["content"] = None
    elif shape == "length":  # a reasoning model that spent max_tokens thinking
        message.update(content=None, reasoning_content="Let me think about")
        choice["finish_reason"] = "length"
    elif shape == "object":  # content as a JSON object rather than its text
        message["content"] = json.loads(content)
    elif shape == "error":  # a proxy's error sent with status 200
        return {"error": {"message": "upstream model overloaded", "type": "server_error"}}
    reply["usage"] = _usage_shape(reply["usage"], knobs.usage_shape)
    if reply["usage"] is _DROP:
        del reply["usage"]
    if knobs.logprobs_shape == "padded" and isinstance(message.get("content"), str):
        message["content"] = "\n\n  " + message["content"] + "\n"
    if knobs.logprobs_shape != "ok" and choice.get("logprobs") is not None:
        choice["logprobs"] = _logprobs_shape(choice["logprobs"], knobs.logprobs_shape)
        if choice["logprobs"] is _DROP:
            del choice["logprobs"]
    if knobs.extra_fields:
        reply.update(service_tier="default", x_proxy={"cost": 0.001, "tags": [1, None]})
        choice.update(stop_reason=None, matched_stop=[1, 2], content_filter_results={})
        message.update(tool_calls=[], annotations=[], audio=None, function_call=None)
        usage = reply.get("usage")
        if isinstance(usage, dict):
            usage.update(completion_tokens_details={"reasoning_tokens": 0}, cost="0.1")
    return reply


_DROP: Any = object()


def _usage_shape(usage: dict[str, Any], shape: str) -> Any:
    counts = ("prompt_tokens", "completion_tokens", "total_tokens")
    if shape == "missing":
        return _DROP
    if shape == "null":
        return None
    if shape == "not_dict":
        return [usage["prompt_tokens"], usage["completion_tokens"]]
    out = dict(usage)
    if shape == "strings":
        out.update({k: str(out[k]) for k in counts})
        out["prompt_tokens_details"] = {"cached_tokens": str(usage["prompt_tokens_details"]
                                                             ["cached_tokens"])}
    elif shape == "floats":
        out.update({k: out[k] + 0.5 for k in counts})
    elif shape == "bad_strings":
        out.update({k: "n/a" for k in counts})
    elif shape == "details_null":
        out["prompt_tokens_details"] = None
    elif shape == "details_list":
        out["prompt_tokens_details"] = [0]
    elif shape == "details_string":
        out["prompt_tokens_details"] = "cached_tokens=0"
    elif shape == "nan":
        out.update(prompt_tokens=math.nan, completion_tokens=math.inf, total_tokens=-math.inf)
    elif shape == "negative":
        out.update({k: -5 for k in counts})
    elif shape == "bools":
        out.update({k: True for k in counts})
    elif shape == "huge":
        out.update({k: 10**400 for k in counts})
    return out


def _logprobs_shape(logprobs: dict[str, Any], shape: str) -> Any:
    tokens = logprobs["content"]
    if shape == "missing":
        return _DROP
    if shape == "null":
        return None
    if shape == "list":
        return tokens
    if shape == "string":
        return "logprobs unavailable"
    if shape == "content_null":
        return {"content": None, "refusal": None}
    if shape == "content_dict":
        return {"content": {"tokens": [t["token"] for t in tokens]}}
    if shape in ("fenced", "padded"):
        def plain(text: str) -> dict[str, Any]:
            return {"token": text, "logprob": 0.0, "bytes": None,
                    "top_logprobs": [{"token": text, "logprob": 0.0, "bytes": None}]}

        head, tail = (["```", "json", "\n"], ["\n", "```"]) if shape == "fenced" else ([" "], [])
        return {"content": [*map(plain, head), *tokens, *map(plain, tail)], "refusal": None}
    odd = json.loads(json.dumps(tokens))
    for token in odd:
        if shape == "bad_tokens":
            token["top_logprobs"] = None if len(token["token"]) % 2 else "x"
        for cand in token.get("top_logprobs") or []:
            if shape == "nan":
                cand["logprob"] = math.nan
            elif shape == "positive":
                cand["logprob"] = 3.0
            elif shape == "strings":
                cand["logprob"] = str(cand["logprob"])
    if shape == "bad_tokens":
        odd[:0] = ["a bare string", {"logprob": -1.0}, None]
    return {"content": odd, "refusal": None}


# --------------------------------------------------------------------------------------------
# Concurrency gate (lives on the server loop; its limit may change at run time)
# --------------------------------------------------------------------------------------------


class _Gate:
    """A FIFO semaphore whose limit can change (None = unlimited)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.active = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    def _free(self) -> bool:
        return self.limit is None or self.active < self.limit

    async def acquire(self) -> None:
        if self._free() and not self._waiters:
            self.active += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # woken, then cancelled: pass the slot on
                self.active -= 1
                self._wake()
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(fut)
            raise

    def release(self) -> None:
        self.active -= 1
        self._wake()

    def set_limit(self, limit: int | None) -> None:
        self.limit = limit
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self._free():
            fut = self._waiters.popleft()
            if not fut.done():
                self.active += 1
                fut.set_result(None)


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


def _error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


#: OpenAI's message for a 429 of type and code ``insufficient_quota`` (no Retry-After).
QUOTA_SPENT = ("You exceeded your current quota, please check your plan and billing details. "
               "For more information on this error, read the docs: "
               "https://platform.openai.com/docs/guides/error-codes/api-errors.")

_STATUS_OUTCOMES = {
    "400": ("Invalid request (test judge).", "invalid_request_error", None),
    "401": ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    "403": ("You are not allowed to use this model.", "permission_error", None),
    "404": ("Not found (test judge).", "invalid_request_error", "unknown_url"),
}


class JudgeServer:
    """An OpenAI-compatible chat-completions judge on 127.0.0.1, answering from ``labels``.

    It runs aiohttp on its own event loop in a background thread. Knobs (see ``Knobs``) can be
    given here or changed at run time with ``configure``.
    """

    def __init__(
        self,
        labels: Mapping[LabelKey, Label] | None = None,
        *,
        model: str = "test-judge",
        api_key: str | None = None,
        seed: int = 0,
        **knobs: Any,
    ) -> None:
        self.labels: dict[LabelKey, Label] = dict(labels or {})
        for value in self.labels.values():
            _label_prob(value)
        self.model = model
        self.api_key = api_key
        self.seed = seed
        self.stats = Stats()
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""
        self.port = 0
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._knobs = Knobs()
        self._script: deque[str] = deque()
        self._prompts = PrefixCache()  # every prompt seen: its cached tokens
        self.batch_api = BatchApi(self)
        self._ids = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._gate: _Gate | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self._bucket: float | None = None  # the token bucket's level (knob token_rate)
        self._bucket_at = 0.0
        self.configure(**knobs)

    # ---- public API ----------------------------------------------------------------------

    @property
    def knobs(self) -> Knobs:
        """A copy of the current knobs."""
        with self._lock:
            return Knobs(**{f.name: getattr(self._knobs, f.name) for f in fields(Knobs)})

    def configure(self, **knobs: Any) -> None:
        """Change knobs at run time (thread-safe); ``script`` replaces the pending script."""
        checked = {name: _check_knob(name, value) for name, value in knobs.items()}
        with self._lock:
            for name, value in checked.items():
                setattr(self._knobs, name, value)
            if "script" in checked:
                self._script = deque(checked["script"])
        if "concurrency" in checked and self._loop is not None and self._gate is not None:
            gate, limit = self._gate, checked["concurrency"]
            self._loop.call_soon_threadsafe(gate.set_limit, limit)

    def reset_stats(self) -> None:
        """Zero the counters and forget the recorded requests (the prefix cache stays)."""
        self.stats.reset()
        self.requests.clear()

    def clear_prefix_cache(self) -> None:
        """Forget every prompt seen (next requests report cached_tokens 0)."""
        self._prompts.clear()

    def take_batch_refusal(self) -> bool:
        """Whether this request to a batch endpoint is refused (knob ``batch_429``)."""
        with self._lock:
            if self._knobs.batch_429 <= 0:
                return False
            self._knobs.batch_429 -= 1
        self.stats.incr(batch_refused=1)
        return True

    def start(self, port: int = 0) -> str:
        """Serve on 127.0.0.1 (``port`` 0: chosen by the OS); return ``base_url``."""
        if self._thread is not None:
            raise RuntimeError("JudgeServer already started")
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="judge-server", daemon=True)
        self._thread.start()
        ready.wait()
        try:
            asyncio.run_coroutine_threadsafe(self._astart(port), loop).result(timeout=30)
        except BaseException:
            self._close_loop()
            raise
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        return self.base_url

    def stop(self) -> None:
        """Close the server now: cancel hung or queued handlers and drop their connections."""
        loop = self._loop
        if loop is None or self._thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._astop(), loop).result(timeout=10)
        finally:
            self._close_loop()

    def __enter__(self) -> JudgeServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- loop side ----------------------------------------------------------------------

    def _close_loop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        if loop is not None and not loop.is_running():
            loop.close()
        self._loop = self._thread = None
        self._runner = self._gate = None

    async def _astart(self, port: int) -> None:
        self._gate = _Gate(self._knobs.concurrency)
        app = web.Application(client_max_size=256 * 1024**2)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        self.batch_api.add_routes(app.router)
        app.router.add_get("/props", self._props)
        app.router.add_get("/api/tags", self._ollama_tags)
        app.middlewares.append(self._json_404)
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.1
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, reuse_address=True)
        await site.start()
        self._runner = runner
        self.port = runner.addresses[0][1]

    async def _astop(self) -> None:
        self._stopping = True
        tasks = [t for t in self._tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=0.5)
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _json_404(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPNotFound:
            message = f"unknown path {request.path}"
            body = _error_body(message, "invalid_request_error", "unknown_url")
            return web.json_response(body, status=404)
        except web.HTTPMethodNotAllowed:
            body = _error_body(
                f"method {request.method} not allowed on {request.path}",
                "invalid_request_error",
                "method_not_allowed",
            )
            return web.json_response(body, status=405)

    def _unauthorized(self, request: web.Request) -> bool:
        if self.api_key is None:
            return False
        return request.headers.get("Authorization", "") != f"Bearer {self.api_key}"

    def _error(
        self, request: web.Request, status: int, message: str, type_: str, code: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> web.Response:
        """An OpenAI-style error; with ``echo_auth`` its message quotes the Authorization
        header (as some proxies do: the harness must never write it anywhere)."""
        if self.knobs.error_message is not None and status >= 500:
            message = self.knobs.error_message
        if self.knobs.echo_auth:
            message += f" (Authorization: {request.headers.get('Authorization', '')})"
        body = _error_body(message, type_, code)
        return web.json_response(body, status=status, headers=headers)

    def _auth_error(self, request: web.Request) -> web.Response:
        return self._error(
            request, 401, "Incorrect API key provided.", "invalid_request_error",
            "invalid_api_key",
        )

    async def _models(self, request: web.Request) -> web.Response:
        mode = self.knobs.models_endpoint
        if mode != "open" and self._unauthorized(request):
            return self._auth_error(request)
        if mode == "403":
            return self._error(
                request, 403, "You are not allowed to list models.", "permission_error", None
            )
        if mode == "404":
            return self._error(
                request, 404, f"unknown path {request.path}", "invalid_request_error",
                "unknown_url",
            )
        if mode == "500":
            return self._error(
                request, 500, "The server had an error (test judge).", "server_error", None
            )
        names = self.knobs.models or [self.model]
        data = [
            {"id": n, "object": "model", "created": 0, "owned_by": "judge-server"} for n in names
        ]
        if self.knobs.model_root is not None:
            for entry in data:
                entry["root"] = self.knobs.model_root
        return web.json_response({"object": "list", "data": data})

    async def _props(self, request: web.Request) -> web.Response:
        """llama.cpp's server properties (knob ``props``), or 404 as other servers answer."""
        props = self.knobs.props
        if props is None:
            raise web.HTTPNotFound()
        return web.json_response(props)

    async def _ollama_tags(self, request: web.Request) -> web.Response:
        """Ollama's local models (knob ``ollama_tags``), or 404 as other servers answer."""
        tags = self.knobs.ollama_tags
        if tags is None:
            raise web.HTTPNotFound()
        return web.json_response({"models": tags})

    def _draw(self, listwise: bool) -> tuple[str, float, Knobs]:
        """Pick this request's outcome and latency (seconds), under the lock."""
        with self._lock:
            k = self._knobs
            knobs = Knobs(**{f.name: getattr(k, f.name) for f in fields(Knobs)})
            if self._script:
                outcome = self._script.popleft()
            else:
                draws = [self._rng.random() for _ in _PROB_KNOBS]
                outcome = "ok"
                # flip's draw (the last) is drawn to keep the sequence, and applied per verdict
                for name, draw, result in zip(
                    _PROB_KNOBS, draws, ("hang", "429", "500", "malformed", "mismatch"),
                    strict=False,
                ):
                    if draw < getattr(k, name):
                        outcome = result
                        break
                if outcome == "ok" and k.fail_503 and self._rng.random() < k.fail_503:
                    outcome = "503"
            latency = self._latency(k)
        if outcome == "mismatch" and not listwise:
            outcome = "ok"
        return outcome, max(latency, 0.0) / 1000.0, knobs

    def _latency(self, k: Knobs) -> float:
        """This request's latency in ms, under the lock (its draws only when a shape is on,
        so other knobs' draws keep their sequence)."""
        latency = k.latency_ms
        if k.latency_jitter_ms:
            latency += self._rng.uniform(-k.latency_jitter_ms, k.latency_jitter_ms)
        if k.latency_sd_ms:
            latency = max(1.0, self._rng.gauss(latency, k.latency_sd_ms))
        if k.latency_tail:
            latency *= math.exp(self._rng.gauss(0.0, math.log(k.latency_tail) / 2.326))
        if k.slow_share and self._rng.random() < k.slow_share:
            latency = k.slow_ms
        return latency

    def _token_bucket(self, k: Knobs, cost: float) -> tuple[bool, dict[str, str]]:
        """Charge ``cost`` tokens if the bucket holds them (on the server loop); return
        whether it did and the rate-limit headers."""
        burst = k.token_burst or k.token_rate
        now = time.monotonic()
        level = burst if self._bucket is None else self._bucket
        level = min(burst, level + (now - self._bucket_at) * k.token_rate)
        taken = level >= cost
        if taken:
            level -= cost
        self._bucket, self._bucket_at = level, now
        headers = {
            "x-ratelimit-limit-tokens": str(int(burst)),
            "x-ratelimit-remaining-tokens": str(int(level)),
            "x-ratelimit-reset-tokens": f"{(burst - level) / k.token_rate:.3f}s",
        }
        if not taken:
            headers["retry-after"] = str(math.ceil((cost - level) / k.token_rate))
        return taken, headers

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        headers = {k.lower(): v for k, v in request.headers.items()}
        entry: dict[str, Any] = {"body": None, "headers": headers, "status": None,
                                 "arrived": time.monotonic()}
        self.requests.append(entry)
        self.stats.incr(requests=1)
        if "x-stainless-retry-count" in headers:
            self.stats.count_retry(headers["x-stainless-retry-count"])
        try:
            response = await self._chat_inner(request, entry)
            entry["status"] = response.status
            return response
        except asyncio.CancelledError:
            if not entry.get("dropped") and not self._stopping:
                self.stats.incr(cancelled=1)  # the client went away before the answer
            raise
        finally:
            if entry["status"] is None:
                entry["status"] = 0  # no answer: hung, or the client went away
            self._tasks.discard(task)

    def _bad_request(self, request: web.Request, message: str) -> web.Response:
        self.stats.incr(status_400=1)
        return self._error(request, 400, message, "invalid_request_error", None)

    async def _chat_inner(self, request: web.Request, entry: dict[str, Any]) -> web.Response:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        entry["body"] = body
        if self._unauthorized(request):
            self.stats.incr(status_401=1)
            return self._auth_error(request)
        if not isinstance(body, dict):
            return self._bad_request(request, "the request body is not a JSON object")
        if body.get("stream"):
            return self._bad_request(request, "streaming is not supported by the test judge")
        fmt = (body.get("response_format") or {}).get("type")
        if fmt is not None and fmt in self.knobs.reject_formats:
            return self._bad_request(request, f"response_format of type {fmt!r} is not supported")
        served = self.knobs.models
        if served and body.get("model") not in served:
            self.stats.incr(status_404=1)
            return self._error(
                request, 404, f"The model `{body.get('model')}` does not exist.",
                "invalid_request_error", "model_not_found",
            )
        try:
            prompt = parse_prompt(body)
        except BadRequest as exc:
            return self._bad_request(request, str(exc))

        outcome, latency, knobs = self._draw(prompt.kind == "listwise")
        if outcome == "mismatch" and knobs.obey_schema_count and (
            pinned_count(body) == len(prompt.chunks)
        ):
            outcome = "ok"  # the grammar holds the count
        if outcome in _STATUS_OUTCOMES:
            return self._status_outcome(request, outcome)
        if outcome == "quota":  # OpenAI's reply when the account's credit is spent
            self.stats.incr(status_429=1)
            return self._error(request, 429, QUOTA_SPENT, "insufficient_quota",
                               "insufficient_quota")
        limits: dict[str, str] = {}
        if knobs.token_rate:
            # as OpenAI counts a request against its tokens per minute: the prompt and the
            # most it may generate
            most = body.get("max_tokens")
            cost = knobs.token_cost or math.ceil(prompt.prompt_chars / 4) + (
                most if isinstance(most, int) and most > 0 else 64)
            taken, limits = self._token_bucket(knobs, cost)
            if not taken:
                self.stats.incr(status_429=1, rate_limited=1)
                return self._error(
                    request, 429, "Rate limit reached for tokens per min (test judge).",
                    "tokens", "rate_limit_exceeded", headers=limits,
                )
        if outcome == "429" and knobs.quick_429:
            self.stats.incr(status_429=1)
            return self._error(
                request, 429, "Rate limit reached (test judge).", "rate_limit_error",
                "rate_limit_exceeded", headers={"Retry-After": knobs.retry_after},
            )
        if outcome == "503":
            self.stats.incr(status_503=1)
            return self._error(
                request, 503, "The server is overloaded (test judge).", "server_error", None,
                headers={"Retry-After": knobs.retry_after},
            )
        gate = self._gate
        assert gate is not None
        await gate.acquire()
        self.stats.enter()
        try:
            if outcome == "hang":
                self.stats.incr(hangs=1)
                await asyncio.sleep(knobs.hang_seconds)
                # still "never answer": drop the connection instead
                if request.transport is not None:
                    request.transport.abort()
                entry["dropped"] = True
                raise asyncio.CancelledError
            if latency:
                await asyncio.sleep(latency)
            if outcome == "429":
                self.stats.incr(status_429=1)
                return self._error(
                    request, 429, "Rate limit reached (test judge).", "rate_limit_error",
                    "rate_limit_exceeded", headers={"Retry-After": knobs.retry_after},
                )
            if outcome == "500":
                self.stats.incr(status_500=1)
                return self._error(
                    request, 500, "The server had an error (test judge).", "server_error", None
                )
            if knobs.content_shape == "html":  # a proxy's page sent with status 200
                return web.Response(text="<html><body>Gateway</body></html>",
                                    content_type="text/html")
            echo = ""
            if knobs.echo_auth:
                echo = f" (Authorization: {request.headers.get('Authorization', '')})"
            reply = self._completion(body, prompt, outcome, knobs, echo)
            if knobs.drip_ms:
                return await self._drip(request, reply, knobs.drip_ms, limits)
            return web.json_response(reply, headers=limits)
        finally:
            self.stats.leave()
            gate.release()

    async def _drip(
        self, request: web.Request, reply: dict[str, Any], every_ms: float,
        headers: Mapping[str, str],
    ) -> web.StreamResponse:
        """Send the headers at once, then the body in 8 pieces ``every_ms`` apart."""
        data = json.dumps(reply).encode()
        response = web.StreamResponse(headers={"Content-Type": "application/json", **headers})
        response.content_length = len(data)
        await response.prepare(request)
        step = max(1, math.ceil(len(data) / 8))
        for start in range(0, len(data), step):
            await asyncio.sleep(every_ms / 1000.0)
            await response.write(data[start:start + step])
        await response.write_eof()
        return response

    def _status_outcome(self, request: web.Request, outcome: str) -> web.Response:
        """A scripted 400, 401, 403 or 404 (never retried by the SDK)."""
        status = int(outcome)
        self.stats.incr(**{f"status_{status}": 1})
        message, type_, code = _STATUS_OUTCOMES[outcome]
        return self._error(request, status, message, type_, code)

    def answer_line(self, body: Any) -> tuple[int, dict[str, Any]]:
        """A Batch API line's answer, as the chat endpoint answers ``body`` (its labels and
        outcome knobs, no latency or connection faults): ``(status, JSON body)``; a reply is
        billed at the batch price."""
        if not isinstance(body, dict):
            return 400, _error_body("the request body is not a JSON object",
                                    "invalid_request_error", None)
        fmt = (body.get("response_format") or {}).get("type")
        if fmt is not None and fmt in self.knobs.reject_formats:
            return 400, _error_body(f"response_format of type {fmt!r} is not supported",
                                    "invalid_request_error", None)
        served = self.knobs.models
        if served and body.get("model") not in served:
            return 404, _error_body(f"The model `{body.get('model')}` does not exist.",
                                    "invalid_request_error", "model_not_found")
        try:
            prompt = parse_prompt(body)
        except BadRequest as exc:
            return 400, _error_body(str(exc), "invalid_request_error", None)
        outcome, _, knobs = self._draw(prompt.kind == "listwise")
        if outcome == "mismatch" and knobs.obey_schema_count and (
            pinned_count(body) == len(prompt.chunks)
        ):
            outcome = "ok"
        if outcome in _STATUS_OUTCOMES:
            message, type_, code = _STATUS_OUTCOMES[outcome]
            return int(outcome), _error_body(message, type_, code)
        if outcome == "quota":
            return 429, _error_body(QUOTA_SPENT, "insufficient_quota", "insufficient_quota")
        if outcome in ("429", "500", "503", "hang"):
            status = 500 if outcome == "hang" else int(outcome)
            return status, _error_body(f"HTTP {status} (test judge).", "server_error", None)
        return 200, self._completion(body, prompt, outcome, knobs, batch=True)

    def _verdict(self, question: str | None, chunk: str, default: Label) -> tuple[int, float]:
        labels = self.labels
        if question is not None and (question, chunk) in labels:
            return _label_prob(labels[(question, chunk)])
        if chunk in labels:
            return _label_prob(labels[chunk])
        self.stats.incr(unknown_chunks=1)
        return _label_prob(default)

    def _segments(
        self, prompt: Prompt, outcome: str, knobs: Knobs, echo: str = "", reasons: bool = True
    ) -> list[Segment]:
        """The reply's content; ``echo`` is appended to every reason; without ``reasons``
        (a reply schema without them) the verdicts alone."""
        if prompt.kind == "reason":
            score = prompt.score if prompt.score is not None else "unknown"
            reason = (
                f"The score is {score} because the relevant contexts are ranked as they "
                "were judged."
            ) + echo
            return [(json.dumps({"reason": reason}), None)]
        judged = [self._verdict(prompt.question, c, knobs.default_label) for c in prompt.chunks]
        if knobs.flip:
            seed = prompt.seed
            judged = [
                (1 - v, 1.0 - p) if _unit(f"{seed}\0{c}") < knobs.flip else (v, p)
                for (v, p), c in zip(judged, prompt.chunks, strict=True)
            ]
        if prompt.kind == "pointwise":
            verdict, p = judged[0]
            reason = (
                "The context is relevant to the question."
                if verdict
                else "The context is not relevant to the question."
            ) + echo
            head = '{"reason": ' + json.dumps(reason) + ", " if reasons else "{"
            return [
                (head + '"verdict": ', None),
                (str(verdict), ("1", "0", p)),
                ("}", None),
            ]
        if outcome == "mismatch":
            judged = judged[:-1]
        segs: list[Segment] = [('{"verdicts": [', None)]
        for i, (verdict, p) in enumerate(judged, start=1):
            what = "relevant" if verdict else "not relevant"
            reason = f"Context {i} is {what} to the question.{echo}"
            if i > 1:
                segs.append((", ", None))
            head = '{"reason": ' + json.dumps(reason) + ", " if reasons else "{"
            segs.append((head + '"verdict": "', None))
            segs.append(("yes" if verdict else "no", ("yes", "no", p)))
            segs.append(('"}', None))
        segs.append(("]}", None))
        return segs

    def _completion(
        self, body: dict[str, Any], prompt: Prompt, outcome: str, knobs: Knobs, echo: str = "",
        batch: bool = False,
    ) -> dict[str, Any]:
        fmt = body.get("response_format") or {}
        json_mode = isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object")
        if outcome == "malformed":
            self.stats.incr(malformed=1)
            if knobs.malformed_content is not None:
                text = knobs.malformed_content
            else:
                text = '{"reason": "cut' if json_mode else "verdict: maybe"
            segments: list[Segment] = [(text, None)]
        else:
            segments = self._segments(prompt, outcome, knobs, echo, asks_reasons(body))
            if outcome == "mismatch":
                self.stats.incr(mismatches=1)
            else:
                self.stats.incr(ok=1)
            if not json_mode:
                segments = [(_TEXT_PREFIX, None), *segments, (_TEXT_SUFFIX, None)]
        segments, finish = _cut(_merge(segments), body.get("max_tokens"))
        content = "".join(text for text, _ in segments)

        with self._lock:
            self._ids += 1
            ident = self._ids
        prompt_tokens = tokens(prompt.prompt_chars)
        cached = self._prompts.cached(prompt.serial, prompt_tokens, knobs.cache_min_tokens,
                                      knobs.cache_step, prompt.roles, prompt.texts)
        completion_tokens = tokens(len(content))
        prices = Prices(knobs.price_input, knobs.price_cached_input, knobs.price_output,
                        knobs.batch_price)
        self.stats.bill(prompt_tokens, cached, completion_tokens,
                        prices.usd(prompt_tokens, cached, completion_tokens, batch), batch)

        logprobs = None
        if body.get("logprobs"):
            top_n = body.get("top_logprobs")
            logprobs = _logprobs(segments, 5 if top_n is None else int(top_n),
                                 split=knobs.logprobs_shape == "split")
        reply = {
            "id": f"chatcmpl-judge-{ident}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": knobs.reply_model or body.get("model") or self.model,
            "system_fingerprint": "fp_test_judge",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "finish_reason": finish,
                    "logprobs": logprobs,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }
        return _reshape(reply, knobs)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="OpenAI-compatible test judge answering from labels")
    ap.add_argument("--port", type=int, default=0, help="0: chosen by the OS")
    ap.add_argument("--labels", type=Path, help='JSON list of {"chunk", "question"?, "label"}')
    ap.add_argument("--model", default="test-judge")
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--default-label", type=json.loads, default=0)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--latency-jitter-ms", type=float, default=0.0)
    ap.add_argument("--latency-sd-ms", type=float, default=0.0)
    ap.add_argument("--latency-tail", type=float, default=0.0, help="log-normal p99 / median")
    ap.add_argument("--slow-ms", type=float, default=0.0)
    ap.add_argument("--slow-share", type=float, default=0.0)
    ap.add_argument("--token-rate", type=float, default=0.0, help="tokens per second")
    ap.add_argument("--token-burst", type=float, default=0.0)
    ap.add_argument("--token-cost", type=float, default=0.0)
    ap.add_argument("--quick-429", action="store_true")
    ap.add_argument("--drip-ms", type=float, default=0.0)
    ap.add_argument("--props-slots", type=int, default=None, help="GET /props total_slots")
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--hang", type=float, default=0.0)
    ap.add_argument("--hang-seconds", type=float, default=3600.0)
    ap.add_argument("--fail-429", type=float, default=0.0)
    ap.add_argument("--retry-after", default="0")
    ap.add_argument("--fail-500", type=float, default=0.0)
    ap.add_argument("--fail-503", type=float, default=0.0)
    ap.add_argument("--malformed", type=float, default=0.0)
    ap.add_argument("--count-mismatch", type=float, default=0.0)
    ap.add_argument("--script", default="", help="comma-separated outcomes, e.g. 429,ok,hang")
    ap.add_argument("--cache-min-tokens", type=int, default=1024)
    ap.add_argument("--cache-step", type=int, default=128)
    ap.add_argument("--batch-seconds", type=float, default=0.0,
                    help="seconds from a batch's creation to its completion")
    ap.add_argument("--no-batch-api", action="store_true", help="404 on /files and /batches")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; print ``READY <base_url>`` once listening."""
    args = _parse_args(argv)
    labels = load_labels(args.labels) if args.labels else {}
    server = JudgeServer(
        labels,
        model=args.model,
        api_key=args.api_key,
        seed=args.seed,
        default_label=args.default_label,
        latency_ms=args.latency_ms,
        latency_jitter_ms=args.latency_jitter_ms,
        latency_sd_ms=args.latency_sd_ms,
        latency_tail=args.latency_tail,
        slow_ms=args.slow_ms,
        slow_share=args.slow_share,
        token_rate=args.token_rate,
        token_burst=args.token_burst,
        token_cost=args.token_cost,
        quick_429=args.quick_429,
        drip_ms=args.drip_ms,
        props=None if args.props_slots is None else {"total_slots": args.props_slots},
        concurrency=args.concurrency,
        hang=args.hang,
        hang_seconds=args.hang_seconds,
        fail_429=args.fail_429,
        retry_after=args.retry_after,
        fail_500=args.fail_500,
        fail_503=args.fail_503,
        malformed=args.malformed,
        count_mismatch=args.count_mismatch,
        script=[s.strip() for s in args.script.split(",") if s.strip()],
        cache_min_tokens=args.cache_min_tokens,
        cache_step=args.cache_step,
        batch_seconds=args.batch_seconds,
        batch_api=not args.no_batch_api,
    )
    done = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    base_url = server.start(args.port)
    print(f"READY {base_url}", flush=True)
    try:
        while not done.wait(0.2):
            pass
    finally:
        server.stop()
        print("STATS " + json.dumps(server.stats.snapshot()), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
