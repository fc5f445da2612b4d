"""The local AWS endpoint, as a process of its own: moto's server with the fixes the local stack relies
on, enforcing IAM (unless `ASYA_LOCAL_IAM=off`), and the local stand-in for EMR Serverless's compute.

moto keeps its state, and the patches below, per process. Run here, no test, CLI or bench process
imports patched moto, and the endpoint's threads have a core's worth of interpreter to themselves
instead of sharing it with the stack's relay and watchdog threads.

Besides AWS's APIs it answers a few of its own, under `/asya-local/`, for the process that started it:
`POST spark-code` (where the deployed assets came from, and each Spark actor's own libraries, for the
Spark runner), `POST spark-stop` (a stack stops: its job is killed), `GET requests` and
`POST requests-reset` (what was asked of it, by service and operation, each with the CPU seconds its
answers took, for `bench/local_mesh`), `GET queue-ages/<prefix>` (how long the oldest message of each
queue has waited: CloudWatch's `ApproximateAgeOfOldestMessage`, which moto does not publish, for the
console), `POST signer` (who holds an access key, and its secret, for the local gateway's SigV4
check: `asya_local.endpoint.signers`), `GET event-api` (the port of the local AppSync Events API's
real-time server, for a deploy to name its domains: `asya_local.event_apis`), `GET patches` (the
patches of moto it runs with, `asya_local.endpoint.patches`, for the tests that prove them). The
Spark runner's lines go to stdout as `<source>\\t<line>`; the endpoint prints `ready` once it serves.
It also serves AppSync Events (`asya_local.endpoint.event_api`): the HTTP publish under `/appsync/`,
and the real-time WebSocket on a port of its own.

It answers no web page: a request with an `Origin` header (a browser's cross-origin call or its
preflight) is refused (403), and moto's global CORS, which would tell any page it may read the answer
(`Access-Control-Allow-Origin: *`), is off (`LocalEndpoint` starts it with `MOTO_DISABLE_GLOBAL_CORS`).
A page can still have the browser send a request whose answer it cannot read (an `<img>`, a form).
The administrator's key has a secret drawn for this endpoint (`asya_local.admin_key`): a request
naming it with a signature made without the secret is refused (403,
`asya_local.endpoint.admin_signature`), and so is a call under `/asya-local/` without the secret in its
`X-Asya-Local-Admin` header (the signer call would hand out any key's secret).

    python -m asya_local.endpoint.server <port> [<pid of the process that started it, which it ends with>]
"""

from __future__ import annotations

import collections
import hmac
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from asya_local.admin_key import HEADER, KEY_ID, SECRET_VARIABLE
from asya_local.endpoint.admin_signature import admin_signature_refused

ADMIN = "/asya-local/"
READY = "ready"
ADMIN_HEADER = "HTTP_" + HEADER.upper().replace("-", "_")  # as WSGI names it
NO_SECRET = b"The endpoint's own calls need the administrator's secret (its X-Asya-Local-Admin header).\n"
NO_WEB_PAGES = b"The local AWS endpoint answers no web page: a request with an Origin header is refused.\n"

StartResponse = Callable[..., Any]


class _Admin:
    """The endpoint's own API in front of moto's application; counts every AWS request it passes on and
    the CPU time of its thread spent answering it (a thread waiting for the interpreter's lock, or in a
    long poll, uses none), which is what tells the endpoint's dear operations from its cheap ones."""

    def __init__(self, moto_app: Any, spark: Any, admin_secret: str, event_apis: Any, realtime_port: int) -> None:
        self.moto_app = moto_app
        self.spark = spark
        self.admin_secret = admin_secret
        self.event_apis = event_apis
        self.realtime_port = realtime_port
        # "service operation" -> [requests, CPU seconds answering them]
        self.asked: collections.defaultdict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if "HTTP_ORIGIN" in environ:
            return _forbidden(start_response, NO_WEB_PAGES)
        path = str(environ.get("PATH_INFO", ""))
        if path.startswith(ADMIN):
            if not hmac.compare_digest(str(environ.get(ADMIN_HEADER, "")), self.admin_secret):
                return _forbidden(start_response, NO_SECRET)
            return self._admin(path.removeprefix(ADMIN), environ, start_response)
        refused = admin_signature_refused(environ, KEY_ID, self.admin_secret, datetime.now(UTC))
        if refused is not None:
            return _forbidden(start_response, f"SignatureDoesNotMatch: {refused} (the administrator's key)\n".encode())
        if self.event_apis.handles(path):
            return self.event_apis.publish_app(environ, start_response)  # type: ignore[no-any-return]
        scope = str(environ.get("HTTP_AUTHORIZATION", "")).split("/")  # Credential=key/date/region/service/...
        service = scope[3] if len(scope) > 3 else "other"
        operation = str(environ.get("HTTP_X_AMZ_TARGET", "")).rpartition(".")[2] or "-"
        started = time.thread_time()
        result: Iterable[bytes] = self.moto_app(environ, start_response)
        with self._lock:
            asked = self.asked[f"{service} {operation}"]
            asked[0] += 1
            asked[1] += time.thread_time() - started
        return result

    def _admin(self, action: str, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        body: Any = None
        if action == "spark-code":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            given = json.loads(environ["wsgi.input"].read(length) or b"{}")
            self.spark.add_code({key: Path(folder) for key, folder in given["code"].items()})
            self.spark.add_libraries({name: [Path(p) for p in paths] for name, paths in given["libraries"].items()})
        elif action == "spark-stop":
            self.spark.stop()
        elif action == "requests":
            with self._lock:
                body = dict(self.asked)
        elif action == "requests-reset":
            with self._lock:
                self.asked.clear()
        elif action.startswith("queue-ages/"):
            from asya_local.endpoint.moto_sqs import oldest_message_ages

            body = oldest_message_ages(action.removeprefix("queue-ages/"))
        elif action == "signer":  # for the local gateway's SigV4 check (`asya_local.endpoint.signers`)
            from asya_local.endpoint.signers import signer
            from asya_local.functions.lambda_shapes import ACCOUNT

            given = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
            body = signer(ACCOUNT, str(given.get("access_key_id")), given.get("session_token"))
            if body is None:
                start_response("404 Not Found", [("Content-Type", "application/json")])
                return [b"null"]
        elif action == "event-api":
            body = {"realtime_port": self.realtime_port}
        elif action == "patches":
            from asya_local.endpoint.patches import applied_in_this_process

            body = [patch.function for patch in applied_in_this_process()]
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"unknown"]
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]


def _forbidden(start_response: StartResponse, why: bytes) -> Iterable[bytes]:
    start_response("403 Forbidden", [("Content-Type", "text/plain")])
    return [why]


def _quiet(handler: type[Any]) -> type[Any]:
    """The request handler without its access log: werkzeug formats each request's line (its time, its
    path decoded) before its logger, set to errors only, drops it, a twentieth of a cheap request."""

    class QuietRequestHandler(handler):  # type: ignore[misc]
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass

    return QuietRequestHandler


def _say(source: str, line: str) -> None:
    print(f"{source}\t{line}", flush=True)


def main() -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    from asya import variables
    from asya_local.endpoint.event_api import EventApis, moto_permits, serve_realtime
    from asya_local.endpoint.moto_iam import enforce
    from asya_local.endpoint.patches import apply_patches
    from asya_local.endpoint.signers import in_process_signer
    from asya_local.endpoint.spark_runner import local_spark_runner
    from asya_local.functions.lambda_shapes import ACCOUNT
    from asya_local.functions.parent_watch import end_with_parent
    from asya_local.roles import iam_enforced

    port = int(sys.argv[1])
    if len(sys.argv) > 2:  # started in a session of its own (`LocalEndpoint`): nothing else ends it with its starter
        end_with_parent(int(sys.argv[2]))
    url = f"http://127.0.0.1:{port}"
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    logging.getLogger("moto").setLevel(logging.ERROR)
    apply_patches(speed=variables.LOCAL_SPEED_PATCHES.read(os.environ))
    if iam_enforced():
        enforce(KEY_ID, os.environ[SECRET_VARIABLE], ACCOUNT)
    spark = local_spark_runner(url, _say)
    event_apis = EventApis(in_process_signer, moto_permits() if iam_enforced() else None)
    realtime_port, stop_realtime = serve_realtime(event_apis)
    application = _Admin(
        DomainDispatcherApplication(create_backend_app),
        spark,
        os.environ[SECRET_VARIABLE],
        event_apis,
        realtime_port,
    )
    server = make_server("127.0.0.1", port, application, threaded=True, request_handler=_quiet(MotoRequestHandler))

    def stop(_signum: int, _frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(READY, flush=True)
    try:
        server.serve_forever()
    finally:
        stop_realtime()
        spark.close()


if __name__ == "__main__":
    main()
