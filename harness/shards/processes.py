"""``run.shard_backend=processes``: a shard's worker is a local process (started fresh with
``spawn``: forking a parent that holds threads and an MLflow helper is unsafe), talking to
the parent over a pipe: progress and its result first, then the parent's requests."""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from harness.shards.worker import Outcome, ShardFailed, ShardResult, ShardWorker, failure

#: Seconds a worker gets to exit after SIGTERM before it is killed.
GRACE_S = 5.0


def serve(worker: ShardWorker, conn: Connection) -> None:
    """A worker process: score the shard, then answer requests until told to stop (or the
    parent is gone)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as it was started (ProcessPool)
    with contextlib.suppress(EOFError, BrokenPipeError, ConnectionResetError):
        conn.send(worker.attempt(lambda n: conn.send(("progress", n))))
        while (request := conn.recv())[0] != "stop":
            conn.send(worker.call(*request))


class ProcessPool:
    """A process per shard."""

    def __init__(self, workers: list[ShardWorker]) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.spans = [w.span for w in workers]
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        # Ctrl-C reaches the whole process group: the parent decides, and stops the workers;
        # a worker started with SIGINT ignored ignores it from its first instruction
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for worker in workers:
                mine, theirs = ctx.Pipe()
                proc = ctx.Process(target=serve, args=(worker, theirs),
                                   name=f"harness-shard-{worker.span.index + 1}")
                proc.start()
                theirs.close()
                self.conns.append(mine)
                self.procs.append(proc)
        except BaseException:
            self.close()
            raise
        finally:
            signal.signal(signal.SIGINT, handler)

    def results(self, progress: Callable[[int], None] | None) -> list[ShardResult]:
        """Wait for every shard's result (forwarding progress); raise the first failure."""
        out: list[Any] = [None] * len(self.conns)
        pending = set(range(len(self.conns)))
        while pending:
            watched: dict[Any, int] = {self.conns[i]: i for i in pending}
            watched.update({self.procs[i].sentinel: i for i in pending})
            for ready in wait(list(watched)):
                i = watched[ready]
                if i not in pending:
                    continue
                outcome = self._drain(i, progress)
                if outcome is not None:
                    out[i] = self._value(i, outcome)
                    pending.discard(i)
        return out

    def call(self, indexes: Sequence[int], method: str, argument: Any) -> list[Any]:
        """Call ``method`` of those workers, in parallel; their results, in order."""
        for i in indexes:
            self._send(i, (method, argument))
        return [self._value(i, self._receive(i)) for i in indexes]

    def close(self) -> None:
        """Stop the workers: asked when idle, terminated (then killed) when not."""
        for i, proc in enumerate(self.procs):
            if proc.is_alive():
                with contextlib.suppress(OSError):
                    self.conns[i].send(("stop",))
                proc.join(0.2)
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            proc.join(GRACE_S)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()

    def _drain(self, i: int, progress: Callable[[int], None] | None) -> Outcome | None:
        """Read worker ``i``'s messages; its outcome once it has sent one."""
        conn = self.conns[i]
        while True:
            try:
                if not conn.poll():
                    if not self.procs[i].is_alive():
                        raise self._died(i)
                    return None
                message = conn.recv()
            except (EOFError, OSError):
                raise self._died(i) from None
            if message[0] != "progress":
                return message  # type: ignore[no-any-return]
            if progress is not None:
                progress(message[1])

    def _send(self, i: int, message: tuple[Any, ...]) -> None:
        try:
            self.conns[i].send(message)
        except OSError:
            raise self._died(i) from None

    def _receive(self, i: int) -> Outcome:
        try:
            return self.conns[i].recv()  # type: ignore[no-any-return]
        except (EOFError, OSError):
            raise self._died(i) from None

    def _value(self, i: int, outcome: Outcome) -> Any:
        if outcome[0] != "result":
            raise failure(outcome, self.spans[i])
        return outcome[1]

    def _died(self, i: int) -> ShardFailed:
        proc = self.procs[i]
        proc.join(1.0)
        code = proc.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        return ShardFailed(
            f"{self.spans[i].describe()}: its worker process died ({how}; out of memory?); "
            "the run is not kept"
        )
