"""A team's MLflow tracking server on 127.0.0.1 for the tests: ``mlflow server`` from this
venv, its backend store in PostgreSQL (``tests/helpers/postgres.py``), artifacts served by
the server from a local folder, and MLflow's basic-auth app in front.

Clients authenticate as a team member would: ``MLFLOW_TRACKING_USERNAME`` and
``MLFLOW_TRACKING_PASSWORD`` in the environment (``env``), or ``http://user:pass@host`` in
the URI (``url_with``). The basic-auth app needs ``Flask-WTF`` (``pip install 'mlflow[auth]'``).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from harness.core.redact import redact
from helpers.chroma_server import free_port
from helpers.postgres import Postgres

#: The team member's password: a canary no output, param or tag may contain.
USER_PASSWORD = "mlflow-canary-4e8b1d"
USER = "alice"
ADMIN = "admin"


def available() -> str | None:
    """Why no server can be started here, or None when one can."""
    from helpers import postgres

    why = postgres.available()
    if why:
        return why
    try:
        import flask_wtf  # noqa: F401  (MLflow's basic-auth app imports it)
        import psycopg  # noqa: F401
    except ImportError as e:
        return f"{e.name} is not installed (pip install 'mlflow[auth]' 'psycopg[binary]')"
    return None


class MlflowServer:
    """``with MlflowServer(pg, root) as server:`` — ``mlflow server --app-name basic-auth``
    with ``--backend-store-uri postgresql+psycopg://…`` (database ``mlflow`` of ``pg``),
    ``--artifacts-destination root/artifacts``, on a free port; user ``USER`` with
    ``USER_PASSWORD`` exists (default permission EDIT).

    Raises ``RuntimeError`` (one line, credentials masked) when the server does not answer
    within ``start_timeout`` seconds.
    """

    def __init__(self, pg: Postgres, root: Path, start_timeout: float = 180) -> None:
        self.pg, self.root, self.start_timeout = pg, root, start_timeout
        self.port = free_port()
        self.admin_password = "admin-" + secrets.token_hex(8)
        self.log = root / f"mlflow-server-{self.port}.log"
        self.artifacts = root / "artifacts"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's tracking URI (no credentials)."""
        return f"http://127.0.0.1:{self.port}"

    def url_with(self, user: str = USER, password: str = USER_PASSWORD) -> str:
        """The tracking URI with credentials in it, as a careless user writes it."""
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    def env(self, user: str = USER, password: str = USER_PASSWORD) -> dict[str, str]:
        """The environment of a client of this server: URI and credentials."""
        return {
            "MLFLOW_TRACKING_URI": self.url,
            "MLFLOW_TRACKING_USERNAME": user,
            "MLFLOW_TRACKING_PASSWORD": password,
        }

    def __enter__(self) -> MlflowServer:
        store = self.pg.database("mlflow").replace("postgresql://", "postgresql+psycopg://", 1)
        users = self.pg.database("mlflow_auth").replace("postgresql://", "postgresql+psycopg://",
                                                         1)
        config = self.root / "basic_auth.ini"
        config.write_text(
            "[mlflow]\n"
            "default_permission = EDIT\n"
            f"database_uri = {users}\n"
            f"admin_username = {ADMIN}\n"
            f"admin_password = {self.admin_password}\n"
            # PBKDF2 per request costs ~0.1-1 s on a busy 2-core machine: check each
            # (user, password) once a minute
            "auth_cache_ttl_seconds = 60\n"
        )
        config.chmod(0o600)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")},
            "MLFLOW_AUTH_CONFIG_PATH": str(config),
            "MLFLOW_FLASK_SERVER_SECRET_KEY": secrets.token_hex(16),
        }
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mlflow", "server", "--app-name", "basic-auth",
                 "--backend-store-uri", store, "--serve-artifacts",
                 "--artifacts-destination", str(self.artifacts),
                 "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                cwd=self.root, start_new_session=True,  # its uvicorn child stops with it
            )
        proc, deadline = self.proc, time.monotonic() + self.start_timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if self.alive():
                self.add_user(USER, USER_PASSWORD)
                return self
            time.sleep(0.3)
        code = proc.poll()
        self.stop()
        state = (f"no answer on /health within {self.start_timeout:.0f} s" if code is None
                 else f"it exited with code {code}")
        raise RuntimeError(f"mlflow server on {self.url} did not start ({state}): "
                           f"{self._cause()} (log: {self.log})")

    def _cause(self) -> str:
        """The log's last error line (its last line if none), credentials masked."""
        lines = [x.strip() for x in self.log.read_text("utf-8", "replace").splitlines()]
        errors = [x for x in lines if "ERROR" in x or "Error" in x or "Exception" in x]
        return redact((errors or [x for x in lines if x] or ["no output"])[-1])

    def alive(self) -> bool:
        """Whether the server answers its health check."""
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as reply:
                return bool(reply.read().strip() == b"OK")
        except OSError:
            return False

    def add_user(self, name: str, password: str) -> None:
        """Create user ``name`` (as the admin, through the server's REST API)."""
        body = json.dumps({"username": name, "password": password}).encode()
        request = urllib.request.Request(
            f"{self.url}/api/2.0/mlflow/users/create", data=body, method="POST",
            headers={"Content-Type": "application/json",
                     "Authorization": _basic(ADMIN, self.admin_password)},
        )
        try:
            with urllib.request.urlopen(request, timeout=60):
                pass
        except urllib.error.HTTPError as e:
            if e.code != 400 or b"RESOURCE_ALREADY_EXISTS" not in e.read():
                raise RuntimeError(f"creating MLflow user {name!r} failed: HTTP {e.code}") from None

    def stop(self) -> None:
        """Stop the server and its workers (SIGTERM to its process group, SIGKILL after 15 s)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            deadline = time.monotonic() + 15
            try:
                os.killpg(proc.pid, sig)  # the group it leads (start_new_session)
                while time.monotonic() < deadline:
                    proc.poll()
                    os.killpg(proc.pid, 0)  # ProcessLookupError once every member is gone
                    time.sleep(0.1)
            except ProcessLookupError:
                break
        proc.wait(10)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
