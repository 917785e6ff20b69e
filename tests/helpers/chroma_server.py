"""A real Chroma server on 127.0.0.1 for the tests: ``chroma run`` from this venv."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType


def free_port() -> int:
    """A TCP port nobody listens on (bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ChromaServer:
    """``chroma run --path PATH --host 127.0.0.1 --port FREE`` while in a ``with`` block.

    Raises ``RuntimeError`` (one line) when the server does not answer its heartbeat
    within ``start_timeout`` seconds.
    """

    def __init__(self, path: Path, start_timeout: float = 60) -> None:
        self.path, self.start_timeout = path, start_timeout
        self.port = free_port()
        self.log = path.parent / f"chroma-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ChromaServer:
        chroma = Path(sys.executable).parent / "chroma"
        if not chroma.is_file():
            raise RuntimeError(f"no chroma command at {chroma}: pip install -e '.[chroma]'")
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [str(chroma), "run", "--path", str(self.path), "--host", "127.0.0.1",
                 "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},  # nothing calls out
            )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if self.alive():
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(
            f"chroma run did not answer on {self.url}/api/v2/heartbeat within "
            f"{self.start_timeout:.0f} s (exit code {self.proc.returncode}; log: {self.log})"
        )

    def alive(self) -> bool:
        """Whether the server answers its heartbeat."""
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as reply:
                return "heartbeat" in "".join(json.loads(reply.read()))
        except (OSError, ValueError):
            return False

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
