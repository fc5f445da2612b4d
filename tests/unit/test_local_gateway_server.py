"""The local API Gateway stand-in, served in this process on loopback with stand-in handlers: the API
key rule, the function's answers and failures, one invocation at a time, and event streams written
chunk by chunk."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from asya_local.functions import worker
from asya_local.functions.gateway_server import Environments, Gateway, GatewayServer
from asya_local.stack import free_port

KEY = "test-key"


class RefusedError(Exception):
    """A refusal as the gateway raises it (`TaskError`): a 4xx status and what is wrong."""

    status = 422


class StandIn:
    """A gateway function (echoes its event) and an `open_event_stream` the test steers."""

    def __init__(self) -> None:
        self.running = 0
        self.most_running = 0
        self.lock = threading.Lock()
        self.acknowledged = threading.Event()
        self.stream_closed = threading.Event()
        self.opened: list[tuple[str, str | None]] = []
        self.last_chunk_at = 0.0

    def handler(self, event: dict[str, Any], _context: Any) -> Any:
        with self.lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            if event["path"] == "/slow":
                time.sleep(0.2)
            if event["path"] == "/boom":
                raise RuntimeError("boom")
            if event["path"] == "/malformed":
                return {"body": "no status"}
            if event["path"] == "/large":  # an answer over Lambda's 6 MB response payload, once encoded
                return {"statusCode": 200, "body": json.dumps({"text": "é" * 1_100_000})}
            return {"statusCode": 200, "body": json.dumps(event)}
        finally:
            with self.lock:
                self.running -= 1

    def open_event_stream(self, task_id: str, last_event_id: str | None) -> Iterator[str] | None:
        if task_id == "missing":
            return None
        if task_id == "broken":
            raise RuntimeError("the task store is down")
        if task_id == "refused":
            raise RefusedError("Last-Event-ID: 'x' is not an event's id")
        self.opened.append((task_id, last_event_id))
        return self._chunks()

    def _chunks(self) -> Iterator[str]:
        try:
            yield 'id: 1\nevent: status\ndata: {"status": "running"}\n\n'
            acknowledged = self.acknowledged.wait(5)
            yield ": keep-alive\n\n"
            self.last_chunk_at = time.monotonic()
            data = json.dumps({"status": "succeeded", "acknowledged": acknowledged})
            yield f"id: 2\nevent: status\ndata: {data}\n\n"
        finally:
            self.stream_closed.set()


@pytest.fixture
def served() -> Iterator[tuple[StandIn, httpx2.Client, dict[str, Any]]]:
    stand_in = StandIn()
    spec = {"function": "asya-t-gateway", "timeout": 1.0, "memory": 128, "api_key": KEY, "rest_api_id": "api-1"}
    server = GatewayServer(Gateway(spec, stand_in.handler, stand_in.open_event_stream), free_port())
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    with httpx2.Client(base_url=server.url, headers={"x-api-key": KEY}, trust_env=False, timeout=5) as client:
        yield stand_in, client, spec
    server.stop()
    thread.join(5)


def test_requests_without_the_api_key_are_forbidden(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    _, client, _ = served
    response = client.get("/api/v1/mesh", headers={"x-api-key": "wrong"})
    assert response.status_code == 403
    assert response.json() == {"message": "Forbidden"}
    assert client.get("/api/v1/mesh/t/events", headers={"x-api-key": ""}).status_code == 403


def test_health_needs_no_key(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    _, client, _ = served
    response = client.get("/health", headers={"x-api-key": ""})
    assert response.status_code == 200
    assert response.json()["path"] == "/health"


def test_a_request_reaches_the_function_as_a_proxy_event(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    _, client, _ = served
    response = client.post("/api/v1/mesh?x=1", json={"flow": "f"})
    event = response.json()
    assert response.status_code == 200
    assert event["httpMethod"] == "POST"
    assert event["path"] == "/api/v1/mesh"
    assert event["queryStringParameters"] == {"x": "1"}
    assert json.loads(event["body"]) == {"flow": "f"}
    assert event["requestContext"]["identity"]["apiKey"] == KEY
    assert response.headers["x-amzn-RequestId"] == event["requestContext"]["requestId"]


def test_a_chunked_request_body_is_read(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    _, client, _ = served
    response = client.post("/echo", content=iter([b'{"a":', b" 1}"]))
    assert json.loads(response.json()["body"]) == {"a": 1}


@pytest.mark.parametrize("path", ["/boom", "/malformed"])
def test_a_failed_invocation_is_a_502(served: tuple[StandIn, httpx2.Client, Any], path: str) -> None:
    _, client, _ = served
    response = client.get(path)
    assert response.status_code == 502
    assert response.json() == {"message": "Internal server error"}


def test_a_function_over_its_timeout_is_a_502(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    _, client, spec = served
    spec["timeout"] = 0.05
    started = time.monotonic()
    response = client.get("/slow")
    assert response.status_code == 502
    assert time.monotonic() - started < 0.2, "the client is answered at the timeout, not when the function ends"


def test_api_gateway_answers_504_at_its_integration_timeout_before_the_function_ends(
    served: tuple[StandIn, httpx2.Client, Any],
) -> None:
    _, client, spec = served
    spec["timeout"], spec["integration_timeout"] = 30.0, 0.05  # the gateway function's 30 s vs API Gateway's 29 s
    started = time.monotonic()
    response = client.get("/slow")
    assert response.status_code == 504
    assert response.json() == {"message": "Endpoint request timed out"}
    assert time.monotonic() - started < 0.2


def test_concurrent_invocations_run_in_their_own_environments() -> None:
    """Each of three requests at once gets its own copy of the function's module (a wait for a task's
    end holds one environment, not the API); a later request reuses a free one."""
    spec = {
        "function": "asya-t-gateway",
        "handler": "tests.support.gateway_environment.handler",
        "timeout": 5.0,
        "memory": 128,
        "api_key": KEY,
        "rest_api_id": "api-1",
    }
    server = GatewayServer(Gateway(spec, worker.handler_module(spec)[1]), free_port())
    serving = threading.Thread(target=server.run, daemon=True)
    serving.start()
    answers: dict[str, dict[str, Any]] = {}
    try:
        with httpx2.Client(base_url=server.url, headers={"x-api-key": KEY}, trust_env=False, timeout=5) as client:

            def call(path: str) -> None:
                answers[path] = client.get(path).json()

            threads = [threading.Thread(target=call, args=(f"/slow/{n}",)) for n in range(3)]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(5)
            overlapped = time.monotonic() - started < 0.8  # three 0.3 s invocations, not one after another
            call("/later")
    finally:
        server.stop()
        serving.join(5)
    assert overlapped
    assert all(answers[f"/slow/{n}"]["path"] == f"/slow/{n}" for n in range(3)), answers  # none mixed up
    environments = {answers[f"/slow/{n}"]["environment"] for n in range(3)}
    assert len(environments) == 3
    assert answers["/later"]["environment"] in environments


def test_past_its_environments_a_request_waits_for_a_free_one() -> None:
    environments = Environments({}, lambda _event, _context: None, limit=1)
    first = environments.take(1.0)
    assert first is not None
    assert environments.take(0.05) is None  # API Gateway would answer 504 at its timeout
    environments.give_back(first)
    assert environments.take(0.05) is first


def test_an_unknown_task_has_no_stream(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    _, client, _ = served
    response = client.get("/api/v1/mesh/missing/events")
    assert response.status_code == 404
    assert response.json() == {"statusCode": 404, "message": "no task 'missing'"}


def test_events_are_streamed_chunk_by_chunk(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    """The second event is only produced once the client has acknowledged the first: without
    streaming (a buffered body) the first would never arrive in time."""
    stand_in, client, _ = served
    events: list[Any] = []
    with client.stream("GET", "/api/v1/mesh/t-1/events", headers={"Last-Event-ID": "7"}) as response:
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["transfer-encoding"] == "chunked"
        for event in httpx2.EventSource(response):
            if not events:
                first_at = time.monotonic()
                stand_in.acknowledged.set()
            events.append(event.json())
    assert first_at < stand_in.last_chunk_at
    assert events == [{"status": "running"}, {"status": "succeeded", "acknowledged": True}]
    assert stand_in.opened == [("t-1", "7")]


def test_a_stream_that_cannot_open_is_a_502(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    _, client, _ = served
    assert client.get("/api/v1/mesh/broken/events").status_code == 502


def test_the_cursor_parameter_is_the_last_event_id(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    stand_in, client, _ = served
    stand_in.acknowledged.set()
    client.get("/api/v1/mesh/t-2/events?cursor=42")
    assert stand_in.opened == [("t-2", "42")]


def test_a_client_that_leaves_ends_the_stream(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    stand_in, client, _ = served
    with client.stream("GET", "/api/v1/mesh/t-3/events") as response:
        next(response.iter_bytes())
    stand_in.acknowledged.set()  # the next chunk finds the connection gone
    assert stand_in.stream_closed.wait(5)
    assert client.get("/health").status_code == 200, "the server goes on serving"


def test_a_stream_the_function_refuses_is_its_4xx(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    _, client, _ = served
    response = client.get("/api/v1/mesh/refused/events")
    assert response.status_code == 422
    assert response.json() == {"statusCode": 422, "message": "Last-Event-ID: 'x' is not an event's id"}


def _raw(url: str, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """One request written by hand (a client library would not send it malformed): status and body."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as connection:
        connection.sendall(head + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize(
    ("length", "expect"),
    [(b"Content-Length: abc", 400), (b"Content-Length: -5", 400), (b"Content-Length: 99999999999", 413)],
)
def test_a_body_framed_wrong_or_past_api_gateway_s_limit_is_refused_unread(
    served: tuple[StandIn, httpx2.Client, Any], length: bytes, expect: int
) -> None:
    stand_in, client, _ = served
    head = b"POST /api/v1/mesh HTTP/1.1\r\nHost: x\r\nx-api-key: " + KEY.encode() + b"\r\n" + length + b"\r\n\r\n"
    status, body = _raw(str(client.base_url), head, b"{}")
    assert status == expect
    assert json.loads(body)["message"]
    assert stand_in.most_running == 0, "the function is not invoked"


def test_a_chunked_body_with_a_bad_chunk_size_is_a_400(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    _, client, _ = served
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nx-api-key: " + KEY.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert _raw(str(client.base_url), head, b"zz\r\n{}\r\n0\r\n\r\n")[0] == 400


def test_a_request_refused_unread_closes_its_connection_saying_so(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    """The rest of a body past API Gateway's limit is never read, so the connection cannot carry
    another request: the answer says `Connection: close`, and the client's next request goes on a new
    connection instead of failing on the closing one ("Server disconnected without sending a response")."""
    _, client, _ = served
    refused = client.post("/echo", content=b"x" * 11_000_000)
    assert (refused.status_code, refused.headers.get("connection")) == (413, "close")
    assert client.post("/echo", content=b"{}").status_code == 200


def test_a_body_over_lambda_s_invocation_limit_is_a_413(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    """Under API Gateway's 10 MB but over the 6 MB a synchronous invocation takes: never invoked."""
    stand_in, client, _ = served
    response = client.post("/echo", content=b"x" * 7_000_000)
    assert response.status_code == 413
    assert stand_in.most_running == 0


def test_concurrent_invocations_in_module_copies_each_read_their_own_event() -> None:
    """Powertools keeps the event being resolved on a class the copies share: unpatched, the first
    invocation read the second's body after its pause (`asya_local.functions.powertools_threads`)."""
    from asya_local.functions import worker
    from asya_local.functions.lambda_shapes import LambdaContext
    from asya_local.functions.powertools_threads import apply_thread_local_events
    from asya_local.functions.rest_proxy import HttpRequest, proxy_event

    apply_thread_local_events()
    spec = {"handler": "tests.support.echo_api.handler", "function": "asya-n-gateway"}
    copies = [worker.handler_copy(spec, number) for number in (1, 2)]
    answers: dict[int, Any] = {}

    def call(number: int) -> None:
        body = json.dumps({"n": number}).encode()
        event = proxy_event(HttpRequest("POST", "/echo", [("content-type", "application/json")], body), "api")
        answers[number] = json.loads(copies[number - 1](event, LambdaContext("asya-n-gateway"))["body"])

    threads = [threading.Thread(target=call, args=(number,)) for number in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {1: {"first": {"n": 1}, "then": {"n": 1}}, 2: {"first": {"n": 2}, "then": {"n": 2}}}


def test_an_answer_over_lambda_s_response_limit_is_a_502(served: tuple[StandIn, httpx2.Client, Any]) -> None:
    """1.1 million non-ASCII characters: 2.2 MB as UTF-8, but 6.6 MB as the function's JSON answer (each one
    `\\u00e9`, and the body's own escaping again), which Lambda refuses to return."""
    _, client, _ = served
    response = client.get("/large")
    assert response.status_code == 502
    assert response.json() == {"message": "Internal server error"}
