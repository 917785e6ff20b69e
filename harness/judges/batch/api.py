"""The Batch API's calls, through the ``openai`` client's ``files`` and ``batches``: upload
an input file, create a batch, retrieve it, read its output and error files, and find a
batch by its input file.

Each call is retried as a chat request is (``judge.max_retries``): 408, 409, 429 and 5xx
after the server's ``Retry-After`` (at most ``judge.max_wait``: a refusal that asks for
longer ends the run) or a back-off, time-outs and dropped connections after a back-off. A
creation whose answer was lost (a time-out, a dropped connection, a 5xx) may have created
the batch: before it is asked again, the batch is looked for by its input file, so a
request is never sent (and paid for) twice. A 401 or 403 ends the run (the key); a 404 is
the caller's to read (a batch or file the server forgot); calls that keep failing end the
run (``JudgeUnavailable``, exit 2: the batches created so far are recorded and a rerun
resumes them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from harness.core.errors import ConfigError, JudgeUnavailable, headline
from harness.core.redact import redact
from harness.core.text import clip
from harness.judges.replies import failures
from harness.judges.transport.pacing import backoff, retry_after, should_retry
from harness.judges.transport.pacing.waits import human

if TYPE_CHECKING:
    import openai
    from openai.types import Batch

T = TypeVar("T")
#: The chat endpoint every line is sent to.
ENDPOINT: Final = "/v1/chat/completions"
#: Pages of ``GET /batches`` (100 batches each, newest first) looked through for a batch
#: made from a given input file.
FIND_PAGES = 20
_RESUME = ("the batches created so far are recorded in the verdict cache: run the same "
           "command again to resume them")


class BatchCalls:
    """The Batch API of one endpoint.

    Args:
        client: The judge's client (made on first use).
        endpoint: Who it is, for messages.
        max_retries: Retries of a call.
        max_wait: Seconds at most a server's ``Retry-After`` may make a call wait.
    """

    def __init__(self, client: Callable[[], openai.AsyncOpenAI],
                 endpoint: Callable[[], failures.Endpoint], max_retries: int,
                 max_wait: float) -> None:
        self.client, self.endpoint = client, endpoint
        self.max_retries, self.max_wait = max_retries, max_wait

    async def check(self) -> None:
        """Before any work: the endpoint has a Batch API (``GET /batches``), else one line."""
        found = await self._call("GET /batches", lambda: self.client().batches.list(limit=1),
                                 missing_ok=True)
        if found is None:
            where = self.endpoint().where
            raise ConfigError(
                f"judge.batch=true: {where} has no Batch API (GET /batches answered 404 Not "
                "Found); set judge.batch=false to judge in realtime, or use an endpoint that "
                "has one (OpenAI's, or an OpenAI-compatible one that serves /v1/batches)")

    async def upload(self, data: bytes, name: str) -> str:
        """Upload an input file (purpose ``batch``); its id."""
        made = await self._call("POST /files", lambda: self.client().files.create(
            file=(name, data, "application/jsonl"), purpose="batch"))
        return str(made.id)

    async def create(self, file_id: str) -> Batch:
        """The batch of ``file_id`` (created, or found when a lost answer had created it)."""
        async def ask() -> Batch:
            return await self.client().batches.create(
                input_file_id=file_id, endpoint=ENDPOINT, completion_window="24h",
                metadata={"created_by": "harness"})
        made: Batch = await self._call("POST /batches", ask,
                                       before_retry=lambda: self.find(file_id))
        return made

    async def retrieve(self, batch_id: str) -> Batch | None:
        """The batch now (``None``: the server does not know it)."""
        got: Batch | None = await self._call(
            f"GET /batches/{batch_id}", lambda: self.client().batches.retrieve(batch_id),
            missing_ok=True)
        return got

    async def content(self, file_id: str) -> bytes | None:
        """An output or error file's bytes (``None``: the server does not have it)."""
        got = await self._call(f"GET /files/{file_id}/content",
                               lambda: self.client().files.content(file_id), missing_ok=True)
        return None if got is None else bytes(got.content)

    async def find(self, file_id: str) -> Batch | None:
        """The batch made from input file ``file_id``, among the newest ``FIND_PAGES`` pages
        of the server's batches; ``None`` when there is none."""
        after: str | None = None
        for _ in range(FIND_PAGES):
            kwargs: dict[str, Any] = {"limit": 100} if after is None else {"limit": 100,
                                                                          "after": after}
            page = await self._call("GET /batches",
                                    lambda: self.client().batches.list(**kwargs),  # noqa: B023
                                    missing_ok=True)
            data = [] if page is None else list(page.data)
            for batch in data:
                if batch.input_file_id == file_id:
                    found: Batch = batch
                    return found
            if page is None or not data or not page.has_more:
                return None
            after = data[-1].id
        return None

    async def _call(self, what: str, make: Callable[[], Awaitable[T]], *,
                    missing_ok: bool = False,
                    before_retry: Callable[[], Awaitable[T | None]] | None = None) -> Any:
        """``make()``'s answer, retried; ``None`` for a 404 when ``missing_ok``."""
        import openai

        retries = 0
        while True:
            hint: float | None = None
            try:
                return await make()
            except openai.APIStatusError as e:
                status, message = e.status_code, failures.server_message(e)
                if status == 404 and missing_ok:
                    return None
                self._refuse(what, e, status, message)
                hint = retry_after(e.response.headers)
                cause = failures.status_text(status, headline(message))
            except openai.APIConnectionError as e:
                cause = clip(redact(str(e.__cause__ or e.message)), 200)
            if retries >= self.max_retries:
                raise JudgeUnavailable(
                    f"judge: {what} at {self.endpoint().where} failed"
                    f"{failures.after(retries)} ({cause}); {_RESUME}")
            retries += 1
            await asyncio.sleep(backoff(retries, hint, self.max_wait))
            if before_retry is not None:  # the lost answer may have done it
                done = await before_retry()
                if done is not None:
                    return done

    def _refuse(self, what: str, error: openai.APIStatusError, status: int, message: str) -> None:
        """Raise when another try cannot help; return when it may."""
        end = self.endpoint()
        if status in (401, 403):
            raise failures.auth_failure(end, status, message)
        spent = failures.quota_spent(end, error)
        if spent is not None:
            raise JudgeUnavailable(spent)
        headers = error.response.headers
        if should_retry(status, headers, self.max_wait):
            return
        wait = retry_after(headers)
        text = failures.status_text(status, headline(message))
        if wait is not None and wait > self.max_wait:
            raise JudgeUnavailable(
                f"judge: {what} at {end.where} was refused ({text}) and asks to wait "
                f"{human(wait)}, longer than judge.max_wait={self.max_wait:g} s; {_RESUME} "
                "once its rate limit has reset, or raise judge.max_wait")
        raise JudgeUnavailable(f"judge: {what} at {end.where} answered {text}; {_RESUME}")
