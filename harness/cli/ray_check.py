"""Before a sweep on a Ray cluster (``hydra/launcher=ray_cluster``) starts: one line, not
minutes of retries or a traceback, when no cluster answers or a secret would not travel."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from harness.core.errors import ConfigError
from harness.core.secrets import PREFIX

#: How long the cluster's address may take to accept a connection.
CONNECT_S = 5.0

#: Where ``ray start --head`` notes the address of this machine's cluster.
CURRENT = Path("/tmp/ray/ray_current_cluster")


def uses_ray_cluster(args: list[str]) -> bool:
    """Whether the command line chooses the cluster launcher."""
    return "hydra/launcher=ray_cluster" in args


def check(args: list[str]) -> None:
    """Refuse a sweep whose jobs could not run on the cluster.

    Raises:
        ConfigError: a credential given on the command line (it is kept in this process's
            environment, which the cluster's nodes do not have); no cluster at
            ``$RAY_ADDRESS`` (or, without it, none started on this machine).
    """
    hidden = [a.partition("=")[0] for a in args if f"${{oc.env:{PREFIX}" in a]
    if hidden:
        raise ConfigError(
            f"{hidden[0]}: a credential on the command line does not reach the Ray cluster's "
            "nodes; set it in each node's environment before `ray start` (PGUSER/PGPASSWORD, "
            "MLFLOW_TRACKING_USERNAME/PASSWORD, the judge's key variable) and give the URL "
            "without it"
        )
    address = os.environ.get("RAY_ADDRESS", "").strip() or "auto"
    if address == "auto":
        if not CURRENT.is_file() or not CURRENT.read_text("utf-8").strip():
            raise ConfigError(
                "hydra/launcher=ray_cluster: no Ray cluster on this machine and RAY_ADDRESS is "
                "not set; start one (ray start --head) or set RAY_ADDRESS=HEAD:6379"
            )
        address = CURRENT.read_text("utf-8").strip()
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_S):
            pass
    except OSError as e:
        raise ConfigError(
            f"hydra/launcher=ray_cluster: no Ray cluster answers at {host}:{port} "
            f"({e.strerror or e}); check RAY_ADDRESS, or start the head node there "
            "(ray start --head)"
        ) from None


def _host_port(address: str) -> tuple[str, int]:
    """``HOST:PORT`` of a Ray address (``ray://HOST:10001``, ``HOST:6379``, ``HOST``)."""
    rest = address.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.rpartition(":")
    if not host:
        return rest, 10001 if address.startswith("ray://") else 6379
    try:
        return host, int(port)
    except ValueError:
        raise ConfigError(
            f"RAY_ADDRESS: expected HOST:PORT (e.g. 10.0.0.5:6379), got {address!r}"
        ) from None
