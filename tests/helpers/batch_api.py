"""OpenAI's Batch API on the test judge: upload a JSONL file, create a batch, poll it, read
its output and error files; every line is answered as ``POST /v1/chat/completions`` would
answer it.

Endpoints, as OpenAI's API reference defines them (``/v1/files``, ``/v1/batches``):

* ``POST /v1/files`` (multipart: ``purpose=batch`` and ``file``, a JSONL of
  ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}``);
* ``GET /v1/files/{id}`` and ``GET /v1/files/{id}/content``;
* ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``): a batch,
  ``validating``;
* ``GET /v1/batches/{id}``: its status as time passes (knob ``batch_seconds``):
  ``validating`` → ``in_progress`` → ``finalizing`` → ``completed``, with ``request_counts``
  and, once done, ``output_file_id`` and ``error_file_id``;
* ``GET /v1/batches`` (``limit``, ``after``): newest first;
* ``POST /v1/batches/{id}/cancel``: ``cancelling``, then ``cancelled``.

A batch's lines are answered when a request first finds it past its time (no clock thread),
in the file's order, each by ``JudgeServer.answer_line`` (labels, knobs, usage with cached
tokens), billed at the batch price. An output line is ``{"id", "custom_id", "response":
{"status_code": 200, "request_id", "body"}, "error": null}``; a failed line goes to the error
file in the same shape with its error status and body; a line that an expired or cancelled
batch did not reach goes there with ``"response": null`` and ``"error": {"code":
"batch_expired" | "batch_cancelled", "message"}``.

Faults are knobs of ``helpers.judge_server.Knobs``: ``batch_api`` (false: 404 everywhere),
``batch_script`` (what becomes of each batch created, in turn: ``BATCH_OUTCOMES``),
``batch_answered``, ``batch_fail_lines`` / ``batch_fail_times`` / ``batch_fail_status``,
``batch_429``, ``batch_max_lines`` / ``batch_max_bytes``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

#: What becomes of a batch (knob ``batch_script``): answered in full; expired or cancelled
#: (by the server) with part of its lines answered; forgotten (404 from then on); failed
#: validation (no line answered).
BATCH_OUTCOMES = ("ok", "expire", "cancel", "forget", "fail")
CHAT = "/v1/chat/completions"
_DONE = ("completed", "expired", "cancelled", "failed")


def _error(message: str, type_: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _reply(status: int, message: str, code: str | None,
           headers: dict[str, str] | None = None) -> web.Response:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return web.json_response(_error(message, kind, code), status=status, headers=headers)


def _share(custom_id: str) -> float:
    """A number in [0, 1) fixed by ``custom_id`` (which lines ``batch_fail_lines`` fails)."""
    return int.from_bytes(hashlib.sha256(custom_id.encode()).digest()[:8], "big") / 2**64


@dataclass
class StoredFile:
    """An uploaded or written file."""

    id: str
    purpose: str
    filename: str
    data: bytes
    created_at: int = field(default_factory=lambda: int(time.time()))

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "object": "file", "bytes": len(self.data),
                "created_at": self.created_at, "filename": self.filename,
                "purpose": self.purpose, "status": "processed"}


@dataclass
class Batch:
    """One batch job: its lines (with how many times each custom_id was submitted before),
    its fate and its status."""

    id: str
    input_file_id: str
    endpoint: str
    window: str
    outcome: str
    lines: list[tuple[dict[str, Any], int]]
    metadata: dict[str, Any] | None = None
    created: float = field(default_factory=time.monotonic)
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: str = "validating"
    times: dict[str, int] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    errors: list[dict[str, Any]] | None = None
    cancel: bool = False

    def as_json(self) -> dict[str, Any]:
        data = {
            "id": self.id, "object": "batch", "endpoint": self.endpoint,
            "errors": None if self.errors is None else {"object": "list", "data": self.errors},
            "input_file_id": self.input_file_id, "completion_window": self.window,
            "status": self.status, "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id, "created_at": self.created_at,
            "expires_at": self.created_at + 86400,
            "request_counts": {"total": len(self.lines), "completed": self.completed,
                               "failed": self.failed},
            "metadata": self.metadata,
        }
        for name in ("in_progress", "finalizing", "completed", "failed", "expired",
                     "cancelling", "cancelled"):
            data[f"{name}_at"] = self.times.get(name)
        return data


class BatchApi:
    """The Batch API of a ``JudgeServer`` (its knobs, stats, lock and ``answer_line``).

    ``lines`` records every line of every batch created: ``{"batch", "custom_id", "body"}``.
    """

    def __init__(self, server: Any) -> None:
        self.server = server
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, Batch] = {}
        self.lines: list[dict[str, Any]] = []
        self._submitted: Counter[str] = Counter()

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Serve the endpoints under ``/v1``."""
        router.add_post("/v1/files", self._upload)
        router.add_get("/v1/files/{id}", self._file)
        router.add_get("/v1/files/{id}/content", self._content)
        router.add_post("/v1/batches", self._create)
        router.add_get("/v1/batches", self._list)
        router.add_get("/v1/batches/{id}", self._retrieve)
        router.add_post("/v1/batches/{id}/cancel", self._cancel)

    # ---- the gate of every endpoint ---------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        """404 without the Batch API, 401 without the key, 429 while ``batch_429`` lasts."""
        knobs = self.server.knobs
        if not knobs.batch_api:
            return _reply(404, f"unknown path {request.path}", "unknown_url")
        if self.server._unauthorized(request):
            return _reply(401, "Incorrect API key provided.", "invalid_api_key")
        if self.server.take_batch_refusal():
            wait = str(knobs.retry_after)
            return _reply(429, "Rate limit reached for batch requests (test judge).",
                          "rate_limit_exceeded",
                          headers={"retry-after": wait, "x-ratelimit-limit-requests": "10",
                                   "x-ratelimit-remaining-requests": "0",
                                   "x-ratelimit-reset-requests": f"{wait}s"})
        return None

    # ---- files ------------------------------------------------------------------------------

    async def _upload(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        form = await request.post()
        purpose, upload = form.get("purpose"), form.get("file")
        if purpose != "batch":
            return _reply(400, f"purpose must be 'batch' (test judge), got {purpose!r}", None)
        if not isinstance(upload, web.FileField):
            return _reply(400, "a multipart field 'file' is required", None)
        data = upload.file.read()
        if len(data) > self.server.knobs.batch_max_bytes:
            return _reply(400, f"file too large: {len(data)} bytes, at most "
                          f"{self.server.knobs.batch_max_bytes}", "file_too_large")
        stored = self._store("batch", upload.filename or "input.jsonl", data)
        self.server.stats.incr(files_uploaded=1)
        return web.json_response(stored.as_json())

    def _store(self, purpose: str, filename: str, data: bytes) -> StoredFile:
        stored = StoredFile(f"file-{uuid.uuid4().hex[:24]}", purpose, filename, data)
        self.files[stored.id] = stored
        return stored

    async def _file(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        stored = self.files.get(request.match_info["id"])
        if stored is None:
            return _reply(404, f"No such File object: {request.match_info['id']}", None)
        return web.json_response(stored.as_json())

    async def _content(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        stored = self.files.get(request.match_info["id"])
        if stored is None:
            return _reply(404, f"No such File object: {request.match_info['id']}", None)
        return web.Response(body=stored.data, content_type="application/octet-stream")

    # ---- batches ----------------------------------------------------------------------------

    async def _create(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            body = await request.json()
        except ValueError:
            return _reply(400, "the request body is not JSON", None)
        if not isinstance(body, dict):
            return _reply(400, "the request body is not a JSON object", None)
        source = self.files.get(str(body.get("input_file_id")))
        if source is None or source.purpose != "batch":
            return _reply(400, f"input_file_id {body.get('input_file_id')!r} is not a batch "
                          "file", None)
        if body.get("endpoint") != CHAT:
            return _reply(400, f"endpoint must be {CHAT} (test judge)", None)
        if body.get("completion_window") != "24h":
            return _reply(400, "completion_window must be '24h'", None)
        lines, errors = self._read_lines(source.data)
        with self.server._lock:
            script = self.server._knobs.batch_script
            outcome = script.pop(0) if script else "ok"
        batch = Batch(f"batch_{uuid.uuid4().hex[:24]}", source.id, CHAT, "24h",
                      "fail" if errors else outcome, [], body.get("metadata"))
        for line in lines:
            cid = str(line["custom_id"])
            self._submitted[cid] += 1
            batch.lines.append((line, self._submitted[cid]))
            self.lines.append({"batch": batch.id, "custom_id": cid, "body": line.get("body")})
        batch.errors = errors or None
        self.server.stats.incr(batches_created=1, batch_lines_submitted=len(lines))
        answer = batch.as_json()
        if batch.outcome != "forget":
            self.batches[batch.id] = batch
        return web.json_response(answer)

    def _read_lines(self, data: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The file's request lines, and the validation errors that fail the batch."""
        lines: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        for n, text in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except ValueError:
                errors.append({"code": "invalid_json_line", "line": n,
                               "message": "This line is not parseable as valid JSON."})
                continue
            cid = line.get("custom_id") if isinstance(line, dict) else None
            if not isinstance(cid, str) or cid in seen:
                errors.append({"code": "duplicate_custom_id" if cid in seen else
                               "missing_required_parameter", "line": n,
                               "message": "custom_id must be a string unique in the file."})
                continue
            if line.get("method") != "POST" or line.get("url") != CHAT:
                errors.append({"code": "mismatched_endpoint", "line": n,
                               "message": f"The line's url must be {CHAT}, with POST."})
                continue
            seen.add(cid)
            lines.append(line)
        limit = self.server.knobs.batch_max_lines
        if len(lines) > limit:
            errors.append({"code": "too_many_requests", "line": None,
                           "message": f"A batch holds at most {limit} requests."})
        return lines, errors

    async def _retrieve(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        self.server.stats.incr(batch_polls=1)
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _reply(404, f"No batch found with id '{request.match_info['id']}'.", None)
        self._advance(batch)
        return web.json_response(batch.as_json())

    async def _list(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            limit = max(1, min(int(request.query.get("limit", "20")), 100))
        except ValueError:
            return _reply(400, "limit must be an integer", None)
        newest = list(reversed(self.batches.values()))
        after = request.query.get("after")
        if after is not None:
            ids = [b.id for b in newest]
            newest = newest[ids.index(after) + 1:] if after in ids else []
        page = newest[:limit]
        for batch in page:
            self._advance(batch)
        data = [b.as_json() for b in page]
        return web.json_response({"object": "list", "data": data,
                                  "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None,
                                  "has_more": len(newest) > limit})

    async def _cancel(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _reply(404, f"No batch found with id '{request.match_info['id']}'.", None)
        if batch.status not in _DONE:
            batch.cancel = True
            self._mark(batch, "cancelling")
        return web.json_response(batch.as_json())

    # ---- time passing -----------------------------------------------------------------------

    def _mark(self, batch: Batch, status: str) -> None:
        batch.status = status
        batch.times.setdefault(status, int(time.time()))

    def _advance(self, batch: Batch) -> None:
        """Move ``batch`` on to where its age puts it (answering its lines when it ends)."""
        if batch.status in _DONE:
            return
        if batch.status == "cancelling":  # one look sees it cancelling, the next cancelled
            self._finish(batch, "cancelled")
            return
        span = self.server.knobs.batch_seconds
        age = time.monotonic() - batch.created
        if batch.outcome == "fail":
            if age >= 0.1 * span:
                self._mark(batch, "failed")
            return
        if age >= span:
            if batch.outcome == "cancel":  # the server cancels it
                self._mark(batch, "cancelling")
            else:
                self._finish(batch, "expired" if batch.outcome == "expire" else "completed")
        elif age >= 0.9 * span:
            self._mark(batch, "finalizing")
        elif age >= 0.1 * span:
            self._mark(batch, "in_progress")
            batch.completed = int(len(batch.lines) * (age / span))

    def _finish(self, batch: Batch, status: str) -> None:
        """Answer the lines (all, or a share when it expired or was cancelled), write the
        output and error files."""
        knobs = self.server.knobs
        reached = len(batch.lines) if status == "completed" else math.floor(
            len(batch.lines) * knobs.batch_answered)
        out: list[dict[str, Any]] = []
        err: list[dict[str, Any]] = []
        for n, (line, submitted) in enumerate(batch.lines):
            cid = str(line["custom_id"])
            entry: dict[str, Any] = {"id": f"batch_req_{uuid.uuid4().hex[:24]}", "custom_id": cid,
                                     "response": None, "error": None}
            if n >= reached:
                entry["error"] = {"code": f"batch_{status}", "message": (
                    "This request could not be executed before the completion window expired."
                    if status == "expired" else "This request was not executed: the batch "
                    "was cancelled.")}
                err.append(entry)
                continue
            if _share(cid) < knobs.batch_fail_lines and submitted <= knobs.batch_fail_times:
                code, body = knobs.batch_fail_status, _error(
                    "The server had an error processing this request (test judge).",
                    "server_error", None)
            else:
                code, body = self.server.answer_line(line.get("body"))
            entry["response"] = {"status_code": code, "request_id": f"req_{uuid.uuid4().hex}",
                                 "body": body}
            (out if code == 200 else err).append(entry)
        batch.completed, batch.failed = len(out), len(err)
        if out:
            batch.output_file_id = self._jsonl("batch_output", out).id
        if err:
            batch.error_file_id = self._jsonl("batch_output", err).id
        self.server.stats.incr(batch_lines_answered=len(out), batch_lines_failed=len(err))
        self._mark(batch, status)

    def _jsonl(self, purpose: str, rows: list[dict[str, Any]]) -> StoredFile:
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
        return self._store(purpose, f"{purpose}.jsonl", data)
