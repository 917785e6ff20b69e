"""A team's MLflow tracking server as the store (``tracking.tracking_uri=http://…``).

Before MLflow first uses a server in a process, one request (no retries, a short timeout)
checks that it answers and accepts the credentials, which MLflow reads from the
environment (``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD``, or
``MLFLOW_TRACKING_TOKEN``) or from the URI (``http://user:pass@host``). Without the check
MLflow retries a server that refuses connections for about four minutes, and reports a
rejected password as the server's page; with it either is one line within seconds, naming
the server (credentials masked) and what to set; so is a server (or its proxy) answering
5xx. MLflow's own retries of later requests are bounded (``BOUNDS``) unless the user set them.
A database server as the store (``postgresql://``, ``mysql://``, ``mssql://``) gets one
connection attempt: MLflow retries one that is down ten times over about 100 s, with a warning
each, when its driver is installed.

Importing this module imports nothing from MLflow; ``check`` does.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from harness.core.errors import TrackingError
from harness.core.redact import redact, redact_uri, register
from harness.core.text import one_line

#: Seconds the check waits for the server's answer.
CHECK_TIMEOUT_S = 10.0
#: MLflow's own retries of a server's requests, for this process and its helpers, unless the
#: user set them: MLflow's defaults (7 retries, back-off factor 2, 120 s a request) wait
#: about four minutes on a server (or its proxy) that answers 5xx, before any message.
BOUNDS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}
#: The cheapest authenticated call every MLflow server has.
_PROBE = "/api/2.0/mlflow/experiments/search"
_CREDENTIALS = (
    "set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) in "
    "the environment to an account of the server"
)
_ELSEWHERE = "or tracking=none to log nothing"


#: Default ports of the database servers MLflow can keep its store in.
_DATABASE_PORTS = {"postgresql": 5432, "mysql": 3306, "mssql": 1433}


def is_server(uri: str) -> bool:
    """Whether ``uri`` names a tracking server (``http://`` or ``https://``)."""
    return uri.split("://", 1)[0].lower() in ("http", "https")


def check(uri: str) -> None:
    """Check that the tracking server at ``uri`` answers and accepts the credentials
    (nothing for other stores).

    Raises:
        TrackingError: The server does not answer, or refuses the credentials: one line.
    """
    if uri.split(":", 1)[0].split("+", 1)[0].lower() in _DATABASE_PORTS:
        _check_database(uri)
        return
    if not is_server(uri):
        return
    for name, value in BOUNDS.items():
        os.environ.setdefault(name, value)  # read by MLflow at each request
    for name in ("MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        register(os.environ.get(name))  # masked in every line quoted from the server
    in_uri = urlsplit(uri).password
    register(in_uri)
    # MLflow prints "View run … at: URL" for each run it ends on a server, with the URI's
    # credentials in the link; the harness prints the run id itself
    if in_uri:
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    else:
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    where = f"MLflow store {redact_uri(uri)}: the tracking server"
    creds = get_default_host_creds(uri)  # type: ignore[no-untyped-call]
    try:
        reply = http_request(  # type: ignore[no-untyped-call]
            creds, _PROBE, "GET", max_retries=0, timeout=CHECK_TIMEOUT_S, raise_on_status=False,
            params={"max_results": 1},
        )
    except Exception as e:  # MLflow wraps the transport's errors in its own, as text
        raise TrackingError(redact(
            f"{where} does not answer ({_cause(e)}); start it, or set "
            f"tracking.tracking_uri=URL (or $MLFLOW_TRACKING_URI) to the right one, {_ELSEWHERE}"
        )) from None
    given = bool(creds.username and creds.password or creds.token or in_uri)
    if reply.status_code == 401:
        what = "refused the credentials" if given else "needs credentials and none were given"
        raise TrackingError(f"{where} {what} (HTTP 401); {_CREDENTIALS}, {_ELSEWHERE}")
    if reply.status_code == 403:
        raise TrackingError(
            f"{where} denied access (HTTP 403); ask its admin for access, or {_CREDENTIALS}, "
            f"{_ELSEWHERE}"
        )
    if reply.status_code >= 500:  # the server, or a proxy in front of it, is failing
        said = one_line(redact(f"{reply.status_code} {reply.reason or ''}".strip()), 80)
        raise TrackingError(
            f"{where} answered HTTP {said}: it (or a proxy in front of it) is failing; check "
            f"it and its log, or set tracking.tracking_uri to another store, {_ELSEWHERE}"
        )


def _check_database(uri: str) -> None:
    """The database server ``uri`` names accepts a connection (one attempt, before MLflow
    and its driver are involved); a URI without a host (a local socket) is MLflow's to open."""
    parts = urlsplit(uri)
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is no number: MLflow's own message names it
        return
    if not host:
        return
    port = port or _DATABASE_PORTS[parts.scheme.split("+", 1)[0].lower()]
    try:
        with socket.create_connection((host, port), timeout=CHECK_TIMEOUT_S):
            pass
    except OSError as e:
        why = e.strerror or (f"no answer within {CHECK_TIMEOUT_S:g} s"
                             if isinstance(e, TimeoutError) else type(e).__name__)
        raise TrackingError(
            f"MLflow store {redact_uri(uri)}: the database server at {host}:{port} does not "
            f"answer ({why}); start it, or set tracking.tracking_uri=URI (or "
            f"$MLFLOW_TRACKING_URI) to the right one, {_ELSEWHERE}"
        ) from None


def _cause(error: BaseException) -> str:
    """The operating system's reason behind ``error`` (``Connection refused``), or what
    kind of failure it was."""
    from requests.exceptions import Timeout

    seen: set[int] = set()
    todo: list[object] = [error]
    timed_out = False
    while todo:
        e = todo.pop()
        if not isinstance(e, BaseException) or id(e) in seen:
            continue
        seen.add(id(e))
        timed_out = timed_out or isinstance(e, Timeout | TimeoutError)
        if isinstance(e, OSError) and e.strerror:
            return e.strerror
        todo += [e.__cause__, e.__context__, getattr(e, "reason", None), *e.args[:1]]
    return f"no answer within {CHECK_TIMEOUT_S:g} s" if timed_out else "no connection"
