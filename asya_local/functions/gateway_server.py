"""The local stand-in for API Gateway in front of the gateway function, run as its own process.

moto models the REST API but does not serve it, so this process does: every HTTP request on
loopback becomes the proxy event API Gateway would build (`asya_local.functions.rest_proxy`), the function's
real handler is invoked with it, and its result is written back as the response. Streams are served
differently: `GET /api/v1/mesh/{id}/events` (and `GET /follow/{id}`, with a follow ticket in place of a
credential) streams Server-Sent Events through the gateway module's
`open_event_stream`, chunk by chunk, as long as the task runs (on AWS the function answers with a
bounded batch and a `retry:` field instead, and clients reconnect; both are the same stream), and so
do A2A's streaming requests to `POST /a2a` (`message/stream`, `tasks/resubscribe` and their 1.0
names), through `open_a2a_stream`; every other A2A request is the function's.

This process is API Gateway's side only, and the standard library's `ThreadingHTTPServer` is enough
for it: it routes nothing and serves no framework, it adapts HTTP to the function's event shape
(routing is the function's own, as on AWS) and enforces what API Gateway enforces (the API key, its
10 MB request and 29 s integration timeout, Lambda's 6 MB invocation and response payloads). Each
request gets a thread, so event streams and waits do not hold up other requests. The function itself
runs in execution environments as on Lambda: child processes that each imported the handler's module
once and run one invocation at a time, up to `ENVIRONMENTS` of them (`asya_local.functions.environments`),
so what the module keeps (Powertools' resolver and the event it resolves, what it built at its first
event) is one invocation's alone. A request that waits for a task's end (`?wait=`) thus holds one
environment, not the API.

The event route's stream is served here, in this process: it imports the handler's module once more,
only for `open_event_stream`, which reads the task store and never touches the resolver's state (the
current event), so streams need no environment each. They are served side by side, as many as clients
open, without holding an environment an invocation could use; an environment ended by the watchdog
cuts no stream. One stream, for a task no one has, is opened at start (`_warm`), so the first watcher
does not wait for what streams use to be built. This import is also where a failed init is reported at
start (`worker.main`), so a function that cannot load stops the API and the stack starts it again.

Locally the API is protected by an API key, as API Gateway does with `apiKeyRequired`: every request
but `GET /health`, `GET /.well-known/...` (`_open`: the A2A agent card, the OAuth protected-resource
metadata, open on AWS too unless the API has no such route) and `GET /follow/{id}?ticket=` (a follow
ticket's stream; without `ticket`, API Gateway's validator's 400) needs the `x-api-key` header, or gets
API Gateway's 403. A request signed with SigV4 is checked instead as API Gateway's IAM authorization
checks it (`asya_local.functions.iam_auth`, against the credentials the local endpoint issued), and its
signer reaches the function in `requestContext.identity`, so the local stack also plays a mesh deployed
with `gateway.auth: iam`. A browser's preflight from one of `gateway.cors_origins` (the function's
`ASYA_GATEWAY_CORS_ORIGINS`) is answered here without a key, as the deployed API answers it (`asya.cors`).
With `gateway.auth: jwt` (the spec has no `api_key`) no key is asked for: the
function verifies each request's bearer token. The streams served here are each signed in first
through the module's `sign_in`, which gives the stream's caller (the key's holder, the SigV4 signer, the
token's subject) or the function's refusal, as the function does, so a stream shows a caller its own
tasks only.

    python -m asya_local.functions.gateway_server '<json spec>'
"""

from __future__ import annotations

import hmac
import json
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from asya import variables
from asya.cors import allowed_origin, answer_headers, parse_origins, preflight_headers
from asya_local.functions import worker
from asya_local.functions.environments import Environments
from asya_local.functions.iam_auth import SignatureRefusedError, Signers, endpoint_signers, is_signed, verify
from asya_local.functions.lambda_shapes import REGION
from asya_local.functions.request_bodies import UnreadableBodyError, read_body
from asya_local.functions.rest_proxy import (
    API_KEY_HEADER,
    HttpRequest,
    HttpResponse,
    MalformedResponseError,
    gateway_answer,
    http_response,
    proxy_event,
)
from asya_local.functions.stage_throttle import StageThrottle
from asya_local.functions.ticket_streams import missing_ticket, ticket_route, while_ticket_holds

EVENTS_ROUTE = re.compile(r"/api/v1/mesh/([^/]+)/events")
A2A_ROUTE = "/a2a"
# read without a key: liveness, and the A2A agent card (what an agent reads before it has credentials)
WELL_KNOWN = "/.well-known/"  # API Gateway's open `GET /.well-known/{proxy+}` (asya_cdk.gateway)
MAX_INVOKE_PAYLOAD_BYTES = 6_291_456  # a synchronous Lambda invocation's request (the proxy event)
MAX_RESPONSE_PAYLOAD_BYTES = 6_291_456  # ... and its response (the proxy response, as JSON)
IDLE_CONNECTION_SECONDS = 120.0
ENVIRONMENTS = 8  # concurrent invocations; Lambda would scale further, a laptop needs no more
INTEGRATION_TIMEOUT_SECONDS = 29.0  # API Gateway's default (and, without a quota raise, maximum) for REST
# (task id, Last-Event-ID, caller=): the caller `sign_in` gave, when the module has `sign_in`
OpenEventStream = Callable[..., Iterator[str] | None]
OpenA2aStream = Callable[..., Iterator[str] | dict[str, Any] | None]  # (body, headers, caller=)
# a proxy event -> its caller (passed on to the stream it opens), or the response refusing it
SignIn = Callable[[dict[str, Any]], Any]
# A client that went away: a browser tab or console page closed (its keep-alive connection or event
# stream reset), a client that stopped reading. Ordinary, not a fault of the API's.
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class Gateway:
    """What API Gateway decides for one request: refuse it, stream it, or invoke the function."""

    def __init__(
        self,
        spec: dict[str, Any],
        open_event_stream: OpenEventStream | None = None,
        open_a2a_stream: OpenA2aStream | None = None,
        sign_in: SignIn | None = None,
        signers: Signers | None = None,
    ) -> None:
        """`signers`: who holds the keys a signed request may use (default: the local endpoint's)."""
        self.spec = spec
        self.open_event_stream = open_event_stream
        self.open_a2a_stream = open_a2a_stream
        self.sign_in = sign_in
        self._api_key = spec["api_key"].encode() if spec.get("api_key") else None
        self.well_known_open = bool(spec.get("well_known_open", True))
        environment = spec.get("environment", {})
        self.cors_origins = parse_origins(environment.get(variables.GATEWAY_CORS_ORIGINS.name, ""))
        throttle = spec.get("throttle")
        self.throttle = StageThrottle(throttle["rate"], int(throttle["burst"])) if throttle else None
        self.route_throttles = {
            route: StageThrottle(limits["rate"], int(limits["burst"]))
            for route, limits in (spec.get("route_throttles") or {}).items()
        }
        self.environments = Environments(spec, ENVIRONMENTS)
        endpoint = environment.get("AWS_ENDPOINT_URL")
        self.signers: Signers = signers or (endpoint_signers(endpoint) if endpoint else lambda _key, _token: None)

    def _open(self, request: HttpRequest) -> bool:
        """What API Gateway lets through without credentials here: liveness, what a caller reads first
        (unless the API has no open `.well-known` route), and a follow ticket's stream, which the
        function's `sign_in` checks."""
        if request.method != "GET":
            return False
        opened = request.path == "/health" or ticket_route(request) is not None
        return opened or (self.well_known_open and request.path.startswith(WELL_KNOWN))

    def respond(self, request: HttpRequest) -> HttpResponse | Iterator[str]:
        throttle = self.route_throttles.get(f"{request.method} {request.path}", self.throttle)
        if throttle is not None and not throttle.take():  # the route's or the stage's, before anything else
            return gateway_answer(429, "Too Many Requests", request.request_id)
        preflight = preflight_headers(request.method, dict(request.headers), self.cors_origins)
        if preflight is not None:  # the API answers it, without credentials (asya_cdk's CORS settings)
            return HttpResponse(204, list(preflight.items()), b"")
        signer = None
        if is_signed(request):  # IAM authorization, as API Gateway does it before the function runs
            try:
                signer = verify(request, self.signers, REGION).fields()
            except SignatureRefusedError as exc:
                return gateway_answer(403, str(exc), request.request_id)
        elif not self._open(request) and not self._has_key(request):
            return gateway_answer(403, "Forbidden", request.request_id)
        ticketed = ticket_route(request)
        if ticketed and (missing := missing_ticket(request)) is not None:  # the REST API's validator's 400
            return missing
        events = ticketed or (EVENTS_ROUTE.fullmatch(request.path) if request.method == "GET" else None)
        if events and self.open_event_stream is not None:
            caller, refused = self._caller(request, signer)
            followed = refused or self._event_stream(request, events.group(1), caller)
            if isinstance(followed, HttpResponse):
                return self._with_cors(request, followed)
            if ticketed and self.sign_in is not None:  # ended at the ticket's lapse, as AWS refuses it then
                event, sign_in = proxy_event(request, self.spec["rest_api_id"], None), self.sign_in
                return while_ticket_holds(followed, lambda: not isinstance(sign_in(event), dict))
            return followed
        if request.method == "POST" and request.path == A2A_ROUTE and self.open_a2a_stream is not None:
            caller, refused = self._caller(request, signer)
            streamed = refused or self._a2a_stream(request, caller)
            if streamed is not None:
                return streamed
        return self.invoke(request, signer)

    def cors_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """What a stream served here carries for an allowed origin, as the function's answers do."""
        origin = allowed_origin(headers, self.cors_origins)
        return answer_headers(origin) if origin is not None else {}

    def _with_cors(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        """A stream's refusal as the function answers it on AWS: with the allowed origin, so the page
        reads why."""
        allowed = self.cors_headers(dict(request.headers))
        return HttpResponse(response.status, [*response.headers, *allowed.items()], response.body)

    def _has_key(self, request: HttpRequest) -> bool:
        """No key is asked for when the spec has none (`gateway.auth: jwt`: tokens are the function's)."""
        if self._api_key is None:
            return True
        return hmac.compare_digest((request.header(API_KEY_HEADER) or "").encode(), self._api_key)

    def _caller(self, request: HttpRequest, signer: dict[str, str] | None) -> tuple[Any, HttpResponse | None]:
        """The caller of a stream served here, as the function would take it (`sign_in`: the key's
        holder, a SigV4 signer, a bearer token's subject), or the function's refusal (a 401 without a
        valid token) as it would answer; (None, None) for a module that does not sign streams in."""
        if self.sign_in is None:
            return None, None
        signed = self.sign_in(proxy_event(request, self.spec["rest_api_id"], signer))
        return (None, http_response(signed)) if isinstance(signed, dict) else (signed, None)

    def _event_stream(self, request: HttpRequest, task_id: str, caller: Any) -> HttpResponse | Iterator[str]:
        assert self.open_event_stream is not None
        last_event_id = request.header("last-event-id") or dict(request.query).get("cursor")
        try:
            stream = self.open_event_stream(task_id, last_event_id, **_as(caller))
        except Exception as exc:  # noqa: BLE001 - as a function error would be answered
            refused = getattr(exc, "status", None)  # the function's own 4xx answer (`TaskError`)
            if isinstance(refused, int) and 400 <= refused < 500:
                body = json.dumps({"statusCode": refused, "message": str(exc)}).encode()
                return HttpResponse(refused, [("Content-Type", "application/json")], body)
            traceback.print_exc(file=sys.stdout)
            return gateway_answer(502, "Internal server error", request.request_id)
        if stream is None:
            body = json.dumps({"statusCode": 404, "message": f"no task {task_id!r}"}).encode()
            return HttpResponse(404, [("Content-Type", "application/json")], body)
        return stream

    def _a2a_stream(self, request: HttpRequest, caller: Any) -> HttpResponse | Iterator[str] | None:
        """A streaming A2A request, streamed here; None for any other, which the function answers."""
        assert self.open_a2a_stream is not None
        headers = {name.lower(): value for name, value in request.headers}
        try:
            outcome = self.open_a2a_stream(request.body, headers, **_as(caller))
        except Exception:  # noqa: BLE001 - as a function error would be answered
            traceback.print_exc(file=sys.stdout)
            return gateway_answer(502, "Internal server error", request.request_id)
        if isinstance(outcome, dict):  # refused: a JSON-RPC error, answered as the function would
            return HttpResponse(200, [("Content-Type", "application/json")], json.dumps(outcome).encode())
        return outcome

    def invoke(self, request: HttpRequest, signer: dict[str, str] | None = None) -> HttpResponse:
        """Invoke the function, answering within API Gateway's integration timeout, counted from the
        request's arrival (a 504, whatever the function does; a request that cannot start in that time
        never runs). The function's own timeout counts from its invocation's start, as on Lambda: the
        environments' watchdog ends an invocation past it, and that is a function error (a 502)."""
        timeout = float(self.spec.get("integration_timeout", INTEGRATION_TIMEOUT_SECONDS))
        deadline = time.monotonic() + timeout
        event = proxy_event(request, self.spec["rest_api_id"], signer)
        if len(json.dumps(event).encode()) > MAX_INVOKE_PAYLOAD_BYTES:  # Lambda refuses the invocation
            return gateway_answer(413, "Request Too Long", request.request_id)
        environment = self.environments.take(timeout)
        if environment is None:
            return gateway_answer(504, "Endpoint request timed out", request.request_id)
        answer = self.environments.invoke(environment, event, max(0.0, deadline - time.monotonic()))
        if answer is None:
            worker.say(f"{request.method} {request.path}: no answer within the integration timeout ({timeout:g} s)")
            return gateway_answer(504, "Endpoint request timed out", request.request_id)
        if answer.error is not None:  # raised, not JSON, or its environment ended (timed out, crashed)
            return gateway_answer(502, "Internal server error", request.request_id)
        answered = len(json.dumps(answer.result).encode())
        if answered > MAX_RESPONSE_PAYLOAD_BYTES:  # Lambda fails the invocation; API Gateway answers 502
            worker.say(
                f"{request.method} {request.path}: Response payload size ({answered} bytes) exceeded maximum "
                f"allowed payload size ({MAX_RESPONSE_PAYLOAD_BYTES} bytes)."
            )
            return gateway_answer(502, "Internal server error", request.request_id)
        try:
            response = http_response(answer.result)
        except MalformedResponseError as exc:
            worker.say(f"{request.method} {request.path}: malformed Lambda proxy response: {exc}")
            return gateway_answer(502, "Internal server error", request.request_id)
        return HttpResponse(
            response.status, [*response.headers, ("x-amzn-RequestId", request.request_id)], response.body
        )


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (`CLIENT_GONE`) is one quiet line, not the standard library's
        traceback on stderr, which `asya up` shows as an error: every closed browser tab printed one.
        Anything else is the API's own fault, and keeps its traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, CLIENT_GONE):
            worker.say(f"client {client_address[0]}:{client_address[1]} went away ({type(error).__name__})")
            return
        super().handle_error(request, client_address)


class GatewayServer:
    """The loopback HTTP server around a `Gateway`; `run` serves until `stop`."""

    def __init__(self, gateway: Gateway, port: int) -> None:
        self.gateway = gateway
        self.httpd = _Server(("127.0.0.1", port), partial(_RequestHandler, gateway=gateway))
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def run(self) -> None:
        serving = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        serving.start()
        worker.say(f"serving {self.url}")
        while not self._stopped.wait(0.5):
            pass
        self.httpd.shutdown()
        self.httpd.server_close()
        self.gateway.environments.stop()

    def stop(self) -> None:
        self._stopped.set()


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked event streams
    timeout = IDLE_CONNECTION_SECONDS

    def __init__(self, *args: Any, gateway: Gateway, **kwargs: Any) -> None:
        self.gateway = gateway  # set first: the base class handles the request in __init__
        super().__init__(*args, **kwargs)

    def _handle(self) -> None:
        started = time.perf_counter()
        try:
            body = read_body(self.headers, self.rfile)
        except UnreadableBodyError as exc:  # answered at once; the rest of the body is never read
            self.close_connection = True
            self._send(gateway_answer(exc.status, str(exc)))
            path = self.path.partition("?")[0]  # a line names the path only: a query may hold a follow ticket
            worker.say(f"{self.command} {path} {exc.status}: {exc}")
            return
        request = HttpRequest(
            method=self.command,
            target=self.path,
            headers=list(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
        )
        outcome = self.gateway.respond(request)
        if isinstance(outcome, HttpResponse):
            self._send(outcome)
            note = str(outcome.status)
        else:
            worker.say(f"{request.method} {request.path}: event stream opened")
            note = f"event stream, {self._stream(outcome)} chunk(s)"
        worker.say(f"{request.method} {request.path} {note} ({(time.perf_counter() - started) * 1000:.0f} ms)")

    def __getattr__(self, name: str) -> Any:
        """`do_<METHOD>` for every method: all reach the function, as with API Gateway's `ANY`
        method, and the function decides what it serves."""
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def _send(self, response: HttpResponse) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if self.close_connection:  # said, so the client does not send its next request on a closing socket
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _stream(self, chunks: Iterator[str]) -> int:
        """Write each chunk as it comes; returns how many were sent. A client that goes away ends
        the stream (the iterator is closed, so the gateway code can clean up)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in self.gateway.cors_headers(dict(self.headers.items())).items():
            self.send_header(name, value)
        self.end_headers()
        sent = 0
        try:
            for chunk in chunks:
                data = chunk.encode("utf-8")
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                    sent += 1
            self.wfile.write(b"0\r\n\r\n")
        except (*CLIENT_GONE, TimeoutError):  # the client left (or stopped reading)
            self.close_connection = True
        except Exception:  # noqa: BLE001 - the stream failed: end the connection without the last chunk
            traceback.print_exc(file=sys.stdout)
            self.close_connection = True
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        return sent

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are logged by `_handle`, one line each, without the Apache-style duplicate."""


def build(spec: dict[str, Any]) -> GatewayServer:
    module, _ = worker.handler_module(spec)  # for the streams; a failed init is reported here, once
    open_event_stream = getattr(module, "open_event_stream", None)
    if open_event_stream is not None:
        threading.Thread(target=_warm, args=(open_event_stream,), daemon=True).start()
    sign_in = getattr(module, "sign_in", None)
    return GatewayServer(
        Gateway(spec, open_event_stream, getattr(module, "open_a2a_stream", None), sign_in), spec["port"]
    )


def _as(caller: Any) -> dict[str, Any]:
    """The stream's caller, for a module that signs streams in; nothing for one that does not."""
    return {} if caller is None else {"caller": caller}


def _warm(open_event_stream: OpenEventStream) -> None:
    """Open a stream for a task no one has, once, while the first environment initializes: what streams
    use (the task store's clients, the modules they import) is built before the first watcher waits for
    it. Without it the first stream took a second longer than a stream after an invocation, and a
    watcher of a short task saw only its end."""
    try:
        open_event_stream(f"asya-local-warm-up-{uuid.uuid4()}", None)
    except Exception as exc:  # noqa: BLE001 - the first real stream builds it instead, and says what fails
        worker.say(f"event streams not warmed: {exc!r}")


if __name__ == "__main__":
    worker.main(build)
