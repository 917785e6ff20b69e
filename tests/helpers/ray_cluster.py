"""A two-node Ray cluster on this machine for the tests, started as on two machines.

``ray start --head --port FREE`` is the head; ``ray start --address 127.0.0.1:PORT`` a
second node with its own raylet, object store and workers. Every port either node would
take by default (dashboard, its agents, the client server, the workers') is a free one, so
that two clusters (or a test's ``ray_local`` cluster) can run at once. Each ``ray start``
runs with ``--block`` in a session of its own: stopping sends it SIGTERM (Ray drains the
node and ends its processes), then kills what is left of that session's process group, and
nothing else. The temporary folder is short (``/tmp/hrayXXXX``): Ray's socket paths must
fit in 107 bytes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from helpers.chroma_server import free_port

#: Set for the nodes and for drivers: no token authentication on a local test cluster.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


class RayCluster:
    """``with RayCluster(env=...) as cluster:`` a head and ``nodes - 1`` more nodes of
    ``cpus`` CPUs each; ``cluster.address`` (``127.0.0.1:PORT``) is what ``RAY_ADDRESS``
    or ``ray.init(address=...)`` take. ``env`` is added to this process's environment
    for the nodes: their workers (the sweep's jobs) see that environment, not the
    driver's. ``cwd`` is the nodes' working folder (the jobs' too)."""

    def __init__(self, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 nodes: int = 2, cpus: int = 1, start_timeout: float = 120) -> None:
        self.env = {**os.environ, **RAY_ENV, **(env or {})}
        self.cwd, self.nodes, self.cpus = cwd, nodes, cpus
        self.start_timeout = start_timeout
        self.port, self.dashboard_port = free_port(), free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp = Path(tempfile.mkdtemp(prefix="hray", dir="/tmp"))
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> RayCluster:
        try:
            self._start("--head", "--port", str(self.port), "--dashboard-host", "127.0.0.1",
                        "--dashboard-port", str(self.dashboard_port),
                        "--ray-client-server-port", str(free_port()))
            self._wait(1)
            for _ in range(self.nodes - 1):
                self._start("--address", self.address)
            self._wait(self.nodes)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _start(self, *args: str) -> None:
        ray = Path(sys.executable).parent / "ray"
        log = self.temp / f"node{len(self.procs)}.log"
        command = [str(ray), "start", "--block", *args, "--node-ip-address", "127.0.0.1",
                   "--num-cpus", str(self.cpus), "--temp-dir", str(self.temp),
                   "--object-store-memory", str(80 * 2**20), "--disable-usage-stats",
                   "--dashboard-agent-listen-port", str(free_port()),
                   "--min-worker-port", "0", "--max-worker-port", "0"]
        with log.open("wb") as out:
            self.procs.append(subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, cwd=self.cwd, start_new_session=True,
            ))

    def _wait(self, count: int) -> None:
        """Until ``count`` nodes are alive (as the state API, through the dashboard, says)."""
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"ray start exited with {dead[0].returncode} "
                                   f"(logs: {self.temp}/node*.log)")
            with contextlib.suppress(Exception):  # not up yet: refused, 5xx, timeouts
                if len(self.alive_nodes()) >= count:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"the Ray cluster did not have {count} alive nodes within "
                           f"{self.start_timeout:.0f} s (logs: {self.temp}/node*.log)")

    def alive_nodes(self) -> list[str]:
        """The ids of the cluster's alive nodes."""
        from ray.util.state import list_nodes

        nodes = list_nodes(address=self.address, filters=[("state", "=", "ALIVE")],
                           raise_on_missing_output=False, timeout=10)
        return [n.node_id for n in nodes]

    def tasks(self, name: str) -> list[dict[str, Any]]:
        """The cluster's tasks running function ``name`` (``state``, ``node_id``, ...)."""
        from ray.util.state import list_tasks

        found = list_tasks(address=self.address, filters=[("func_or_class_name", "=", name)],
                           raise_on_missing_output=False, timeout=10, detail=True)
        return [{"state": t.state, "node_id": t.node_id, "task_id": t.task_id} for t in found]

    def stop(self) -> None:
        """Stop the nodes (the last started first), then remove the temporary folder."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(45)  # Ray drains a node for up to 30 s
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # what the node left behind
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
        self.procs.clear()
        shutil.rmtree(self.temp, ignore_errors=True)
