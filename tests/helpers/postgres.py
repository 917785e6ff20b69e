"""A real PostgreSQL server on 127.0.0.1 for the tests: Debian's binaries (apt postgresql).

The server runs as the ``postgres`` system user (PostgreSQL refuses to run as root), from
a fresh data folder with password authentication, on a free port; ``url`` carries its
credentials (``postgresql://USER:PASSWORD@127.0.0.1:PORT/DB``), the way a team's URL would.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

#: The password of the test role: a canary no output may contain.
PASSWORD = "pg-canary-7f3a9c"


def bin_dir() -> Path | None:
    """Debian's PostgreSQL binaries (the newest version installed), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


def available() -> str | None:
    """Why no server can be started here, or None when one can."""
    if bin_dir() is None:
        return "PostgreSQL is not installed (apt-get install postgresql)"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no postgres system user (apt-get install postgresql creates it)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Postgres:
    """``with Postgres() as pg: pg.url`` — a server with role ``harness`` and database
    ``harness`` (and ``pg.database(name)`` for more)."""

    def __init__(self, user: str = "harness", password: str = PASSWORD) -> None:
        self.user, self.password = user, password
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="harness-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.bin = bin_dir()

    def url(self, database: str = "harness") -> str:
        """The URL with credentials."""
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{database}"

    def _as_postgres(self, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False,
                              **kw)  # type: ignore[call-overload]

    def __enter__(self) -> Postgres:
        why = available()
        if why:
            raise RuntimeError(why)
        assert self.bin is not None
        entry = pwd.getpwnam("postgres")
        os.chown(self.root, entry.pw_uid, entry.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        done = self._as_postgres(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", self.user,
            f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8", "--no-instructions",
        )
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stderr.strip()[-500:]}")
        done = self._as_postgres(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w",
            "-t", "60", "-o", f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1",
            "start",
        )
        if done.returncode:
            raise RuntimeError(f"postgres did not start: {done.stderr.strip()[-500:]} "
                               f"(log: {self.log})")
        self.database("harness")
        return self

    def database(self, name: str) -> str:
        """Create database ``name`` (if new); its URL."""
        env = {**os.environ, "PGPASSWORD": self.password}
        for _ in range(50):
            done = subprocess.run(
                ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d",
                 "postgres", "-tAc", f"SELECT 1 FROM pg_database WHERE datname = '{name}'"],
                capture_output=True, text=True, env=env, check=False,
            )
            if done.returncode == 0:
                break
            time.sleep(0.2)
        if done.stdout.strip() != "1":
            subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
                            "-d", "postgres", "-c", f'CREATE DATABASE "{name}"'],
                           capture_output=True, text=True, env=env, check=True)
        return self.url(name)

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        if self.bin is not None and self.data.exists():
            self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast",
                              "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
