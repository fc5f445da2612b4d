"""The local API Gateway stand-in, served in this process on loopback, its function run in execution
environments (child processes, `tests.support.gateway_stand_in`): the API key rule, the function's
answers and failures, one invocation at a time per environment, environments replaced when they end
and stopped with the server, and event streams (served in this process) written chunk by chunk."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from asya_local.endpoint.process import free_port
from asya_local.functions.environments import Environments
from asya_local.functions.gateway_server import Gateway, GatewayServer

KEY = "test-key"
SPEC = {
    "function": "asya-t-gateway",
    "handler": "tests.support.gateway_stand_in.handler",
    "environment": {},
    "timeout": 1.0,
    "memory": 256,
    "api_key": KEY,
    "rest_api_id": "api-1",
}


class RefusedError(Exception):
    """A refusal as the gateway raises it (`TaskError`): a 4xx status and what is wrong."""

    status = 422


class StandIn:
    """An `open_event_stream` the test steers (it runs in the API's own process)."""

    def __init__(self) -> None:
        self.acknowledged = threading.Event()
        self.stream_closed = threading.Event()
        self.opened: list[tuple[str, str | None]] = []
        self.last_chunk_at = 0.0

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


@contextmanager
def serving(**spec: Any) -> Iterator[tuple[GatewayServer, httpx2.Client]]:
    """The API on a free port, its spec `SPEC` with `spec`'s changes; stopped (environments too) after."""
    server = GatewayServer(Gateway({**SPEC, **spec}), free_port())
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with httpx2.Client(base_url=server.url, headers={"x-api-key": KEY}, trust_env=False, timeout=20) as client:
            yield server, client
    finally:
        server.stop()
        thread.join(10)


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[GatewayServer, httpx2.Client]]:
    """One API for the tests that need no fresh one (an environment's init takes a few tenths of a second)."""
    with serving() as started:
        yield started


@pytest.fixture
def served(api: tuple[GatewayServer, httpx2.Client]) -> tuple[StandIn, httpx2.Client]:
    server, client = api
    stand_in = StandIn()
    server.gateway.open_event_stream = stand_in.open_event_stream
    return stand_in, client


def _ends(pid: int, within: float = 5.0) -> bool:
    """Whether the process ends within `within` seconds (reaped, or a zombie its new parent has not
    reaped yet)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def test_requests_without_the_api_key_are_forbidden(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
    response = client.get("/api/v1/mesh", headers={"x-api-key": "wrong"})
    assert response.status_code == 403
    assert response.json() == {"message": "Forbidden"}
    assert client.get("/api/v1/mesh/t/events", headers={"x-api-key": ""}).status_code == 403


def test_health_needs_no_key(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
    response = client.get("/health", headers={"x-api-key": ""})
    assert response.status_code == 200
    assert response.json()["path"] == "/health"


def test_a_request_reaches_the_function_as_a_proxy_event(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
    response = client.post("/api/v1/mesh?x=1", json={"flow": "f"})
    event = response.json()
    assert response.status_code == 200
    assert event["httpMethod"] == "POST"
    assert event["path"] == "/api/v1/mesh"
    assert event["queryStringParameters"] == {"x": "1"}
    assert json.loads(event["body"]) == {"flow": "f"}
    assert event["requestContext"]["identity"]["apiKey"] == KEY
    assert response.headers["x-amzn-RequestId"] == event["requestContext"]["requestId"]


def test_a_chunked_request_body_is_read(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
    response = client.post("/echo", content=iter([b'{"a":', b" 1}"]))
    assert json.loads(response.json()["body"]) == {"a": 1}


@pytest.mark.parametrize("path", ["/boom", "/malformed", "/unmarshalable"])
def test_a_failed_invocation_is_a_502(served: tuple[StandIn, httpx2.Client], path: str) -> None:
    _, client = served
    response = client.get(path)
    assert response.status_code == 502
    assert response.json() == {"message": "Internal server error"}


def test_a_function_over_its_timeout_is_a_502_and_its_environment_replaced() -> None:
    """Lambda's timeout error at the function's timeout; the watchdog ends the environment, and the next
    request gets a new one."""
    with serving(timeout=0.3) as (_, client):
        first = client.get("/echo").json()["environment"]
        started = time.monotonic()
        response = client.get("/hang")
        assert response.status_code == 502
        assert time.monotonic() - started < 0.8, "the client is answered at the timeout, not when the function ends"
        after = client.get("/echo").json()["environment"]
    assert after != first
    assert _ends(first)


def test_an_environment_that_crashes_is_a_502_and_is_replaced(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
    first = client.get("/echo").json()["environment"]
    response = client.get("/exit")
    assert response.status_code == 502
    assert response.json() == {"message": "Internal server error"}
    assert client.get("/echo").json()["environment"] != first
    assert _ends(first)


def test_api_gateway_answers_504_at_its_integration_timeout_before_the_function_ends() -> None:
    # the gateway function's 30 s against API Gateway's 29 s
    with serving(timeout=30.0, integration_timeout=0.05) as (_, client):
        started = time.monotonic()
        response = client.get("/slow")
        assert response.status_code == 504
        assert response.json() == {"message": "Endpoint request timed out"}
        assert time.monotonic() - started < 0.2


def _at_once(client: httpx2.Client, paths: list[str]) -> tuple[dict[str, Any], float]:
    """Each path requested in a thread of its own, all at once: the answers' bodies, and how long it took."""
    answers: dict[str, Any] = {}

    def call(path: str) -> None:
        answers[path] = client.get(path).json()

    threads = [threading.Thread(target=call, args=(path,)) for path in paths]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return answers, time.monotonic() - started


def test_concurrent_invocations_run_in_their_own_environments() -> None:
    """Three requests at once run in three environments (a wait for a task's end holds one, not the
    API); an idle one is used again."""
    paths = [f"/slow/{n}" for n in range(3)]
    with serving(timeout=5.0) as (_, client):
        _at_once(client, paths)  # the environments are started and their inits done
        answers, elapsed = _at_once(client, paths)
        later = client.get("/later").json()
    assert elapsed < 0.8, "three 0.3 s invocations, not one after another"
    assert all(answers[path]["path"] == path for path in paths), answers  # none mixed up
    environments = {answers[path]["environment"] for path in paths}
    assert len(environments) == 3
    assert later["environment"] in environments


def test_past_its_environments_a_request_waits_for_a_free_one() -> None:
    environments = Environments(SPEC, limit=1)
    try:
        first = environments.take(5.0)
        assert first is not None
        assert environments.take(0.05) is None  # API Gateway would answer 504 at its timeout
        answer = environments.invoke(first, {"path": "/echo"}, 5.0)
        assert answer is not None
        assert answer.result["statusCode"] == 200
        assert environments.take(0.05) is first
    finally:
        environments.stop()


def test_an_unknown_task_has_no_stream(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
    response = client.get("/api/v1/mesh/missing/events")
    assert response.status_code == 404
    assert response.json() == {"statusCode": 404, "message": "no task 'missing'"}


def test_events_are_streamed_chunk_by_chunk(served: tuple[StandIn, httpx2.Client]) -> None:
    """The second event is only produced once the client has acknowledged the first: without
    streaming (a buffered body) the first would never arrive in time."""
    stand_in, client = served
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


def test_an_a2a_stream_is_streamed_here_and_any_other_a2a_request_is_the_function_s(
    served: tuple[StandIn, httpx2.Client], api: tuple[GatewayServer, httpx2.Client]
) -> None:
    """`open_a2a_stream` decides: chunks are streamed, a dict is its JSON-RPC refusal, None goes on to
    the function (which here echoes its proxy event)."""
    _, client = served
    server, _ = api
    seen: list[tuple[bytes, dict[str, str]]] = []

    def open_a2a_stream(body: bytes, headers: dict[str, str]) -> Iterator[str] | dict[str, Any] | None:
        seen.append((body, headers))
        method = json.loads(body)["method"]
        if method == "message/stream":
            return iter(['data: {"result": 1}\n\n', 'data: {"result": 2}\n\n'])
        if method == "tasks/resubscribe":
            return {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "no task"}}
        return None

    server.gateway.open_a2a_stream = open_a2a_stream
    try:
        with client.stream("POST", "/a2a", json={"method": "message/stream"}) as response:
            assert response.headers["content-type"] == "text/event-stream"
            assert [event.json() for event in httpx2.EventSource(response)] == [{"result": 1}, {"result": 2}]
        refused = client.post("/a2a", json={"method": "tasks/resubscribe"}, headers={"A2A-Version": "1.0"})
        assert (refused.status_code, refused.json()["error"]["code"]) == (200, -32001)
        assert seen[-1][1]["a2a-version"] == "1.0", "headers by lower-case name"
        invoked = client.post("/a2a", json={"method": "message/send"})
        assert invoked.json()["path"] == "/a2a", "the function answered it"
        assert client.post("/a2a", json={"method": "message/stream"}, headers={"x-api-key": ""}).status_code == 403
    finally:
        server.gateway.open_a2a_stream = None


def test_the_a2a_agent_card_needs_no_key(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        response = client.get(path, headers={"x-api-key": ""})
        assert (response.status_code, response.json()["path"]) == (200, path)
    assert client.post("/.well-known/agent.json", headers={"x-api-key": ""}).status_code == 403, "only reading it"


def test_without_the_apis_open_route_the_agent_card_needs_the_key_too() -> None:
    """`gateway.a2a.public_card: off` under `iam` or `api_key`: the API has no open `.well-known` route,
    so API Gateway refuses a keyless read before the function runs, and so does the local gateway."""
    with serving(well_known_open=False) as (_, client):
        assert client.get("/.well-known/agent-card.json", headers={"x-api-key": ""}).status_code == 403
        assert client.get("/.well-known/agent-card.json").json()["path"] == "/.well-known/agent-card.json"
        assert client.get("/health", headers={"x-api-key": ""}).status_code == 200, "liveness stays open"


def test_a_stream_that_cannot_open_is_a_502(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
    assert client.get("/api/v1/mesh/broken/events").status_code == 502


def test_the_cursor_parameter_is_the_last_event_id(served: tuple[StandIn, httpx2.Client]) -> None:
    stand_in, client = served
    stand_in.acknowledged.set()
    client.get("/api/v1/mesh/t-2/events?cursor=42")
    assert stand_in.opened == [("t-2", "42")]


def test_a_client_that_leaves_ends_the_stream(served: tuple[StandIn, httpx2.Client]) -> None:
    stand_in, client = served
    with client.stream("GET", "/api/v1/mesh/t-3/events") as response:
        next(response.iter_bytes())
    stand_in.acknowledged.set()  # the next chunk finds the connection gone
    assert stand_in.stream_closed.wait(5)
    assert client.get("/health").status_code == 200, "the server goes on serving"


def test_a_stream_the_function_refuses_is_its_4xx(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
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
    served: tuple[StandIn, httpx2.Client], length: bytes, expect: int
) -> None:
    _, client = served
    head = b"POST /api/v1/mesh HTTP/1.1\r\nHost: x\r\nx-api-key: " + KEY.encode() + b"\r\n" + length + b"\r\n\r\n"
    before = client.get("/echo").json()["invocations"]
    status, body = _raw(str(client.base_url), head, b"{}")
    assert status == expect
    assert json.loads(body)["message"]
    assert client.get("/echo").json()["invocations"] == before + 1, "the function was not invoked"


def test_a_refused_request_s_line_names_its_path_not_its_follow_ticket(
    served: tuple[StandIn, httpx2.Client], capsys: pytest.CaptureFixture[str]
) -> None:
    """Tickets stay out of the logs (docs/security.md): the query string is not the path."""
    _, client = served
    head = b"GET /follow/t-1?ticket=SEALED-SECRET HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"
    assert _raw(str(client.base_url), head, b"")[0] == 400
    printed = capsys.readouterr().out
    assert "GET /follow/t-1 400" in printed
    assert "SEALED-SECRET" not in printed


def test_a_chunked_body_with_a_bad_chunk_size_is_a_400(served: tuple[StandIn, httpx2.Client]) -> None:
    _, client = served
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nx-api-key: " + KEY.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert _raw(str(client.base_url), head, b"zz\r\n{}\r\n0\r\n\r\n")[0] == 400


def test_a_request_refused_unread_closes_its_connection_saying_so(served: tuple[StandIn, httpx2.Client]) -> None:
    """The rest of a body past API Gateway's limit is never read, so the connection cannot carry
    another request: the answer says `Connection: close`, and the client's next request goes on a new
    connection instead of failing on the closing one ("Server disconnected without sending a response")."""
    _, client = served
    refused = client.post("/echo", content=b"x" * 11_000_000)
    assert (refused.status_code, refused.headers.get("connection")) == (413, "close")
    assert client.post("/echo", content=b"{}").status_code == 200


def test_a_body_over_lambda_s_invocation_limit_is_a_413(served: tuple[StandIn, httpx2.Client]) -> None:
    """Under API Gateway's 10 MB but over the 6 MB a synchronous invocation takes: never invoked."""
    _, client = served
    before = client.get("/echo").json()["invocations"]
    response = client.post("/echo", content=b"x" * 7_000_000)
    assert response.status_code == 413
    assert client.get("/echo").json()["invocations"] == before + 1, "the function was not invoked"


def test_two_invocations_at_once_each_read_their_own_event_through_powertools() -> None:
    """Powertools keeps the event being resolved on a class (`BaseRouter.current_event`): in one process,
    the first invocation would read the second's body after its pause. Each runs in an environment of
    its own, so each reads its own."""

    def echo(client: httpx2.Client, number: int, answers: dict[int, Any]) -> None:
        answers[number] = client.post("/echo", json={"n": number}).json()

    with serving(handler="tests.support.echo_api.handler") as (_, client):
        for _ in range(2):  # the first pair starts the second environment, the second pair runs in both
            answers: dict[int, Any] = {}
            threads = [threading.Thread(target=echo, args=(client, number, answers)) for number in (1, 2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10)
    assert answers[1]["environment"] != answers[2]["environment"]
    assert {number: (answer["first"], answer["then"]) for number, answer in answers.items()} == {
        1: ({"n": 1}, {"n": 1}),
        2: ({"n": 2}, {"n": 2}),
    }


def _hang(url: str) -> None:
    with contextlib.suppress(httpx2.TransportError):  # the API is killed under it
        httpx2.get(f"{url}/hang", headers={"x-api-key": KEY}, trust_env=False, timeout=10)


def test_environments_end_with_the_api_even_when_it_is_killed() -> None:
    """A stopped API stops its environments; a killed one (the stack's fault restarts SIGKILL it) leaves
    none behind either, so its output pipe, which they share, closes and the stack starts a new one."""
    with serving(timeout=5.0) as (_, client):
        answers, _ = _at_once(client, ["/slow/1", "/slow/2"])
    assert all(_ends(answer["environment"]) for answer in answers.values())

    port = free_port()
    spec = {**SPEC, "timeout": 5.0, "port": port}
    front = subprocess.Popen(
        [sys.executable, "-m", "asya_local.functions.gateway_server", json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers={"x-api-key": KEY}, trust_env=False) as api:
            deadline = time.monotonic() + 20
            while True:
                try:
                    environment = api.get("/echo", timeout=5).json()["environment"]
                    break
                except httpx2.TransportError:
                    assert time.monotonic() < deadline, "the API did not start"
                    time.sleep(0.05)
            busy = threading.Thread(target=_hang, args=(f"http://127.0.0.1:{port}",), daemon=True)
            busy.start()  # the environment is mid-invocation when its API dies
            time.sleep(0.3)
            os.kill(front.pid, signal.SIGKILL)
        front.wait(5)
        assert front.stdout is not None
        closed = threading.Thread(target=front.stdout.read, daemon=True)
        closed.start()
        closed.join(5)
        assert not closed.is_alive(), "an environment still holds the API's output open"
        assert _ends(environment)
    finally:
        front.kill()
        front.wait(5)


def test_an_answer_over_lambda_s_response_limit_is_a_502(served: tuple[StandIn, httpx2.Client]) -> None:
    """1.1 million non-ASCII characters: 2.2 MB as UTF-8, but 6.6 MB as the function's JSON answer (each one
    `\\u00e9`, and the body's own escaping again), which Lambda refuses to return."""
    _, client = served
    response = client.get("/large")
    assert response.status_code == 502
    assert response.json() == {"message": "Internal server error"}


def test_a_client_that_resets_its_connection_prints_no_traceback(
    served: tuple[StandIn, httpx2.Client], capfd: pytest.CaptureFixture[str]
) -> None:
    """A browser tab closed while its keep-alive connection waits for the next request resets it (what
    `asya up` showed as `ConnectionResetError: [Errno 104]` tracebacks, one per page closed): one quiet
    line, no traceback, and the API goes on serving."""
    _, client = served
    host, port = client.base_url.host, client.base_url.port
    assert port is not None
    with socket.create_connection((host, port)) as connection:
        connection.sendall(b"GET /api/v1/flows HTTP/1.1\r\nHost: here\r\n\r\n")  # no key: a 403 at once
        assert connection.recv(4096).startswith(b"HTTP/1.1 403")
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    deadline = time.monotonic() + 5
    said = ""
    while "went away" not in said and time.monotonic() < deadline:
        time.sleep(0.05)
        out, err = capfd.readouterr()
        said += out + err
    assert "went away (ConnectionResetError)" in said
    assert "Traceback" not in said
    assert "Exception occurred" not in said
    assert client.get("/health").status_code == 200, "the server goes on serving"


def test_a_follow_tickets_stream_needs_no_key_but_its_ticket(served: tuple[StandIn, httpx2.Client]) -> None:
    """As the deployed API's `GET /follow/{id}`: no key asked (a browser's EventSource has none), the
    `ticket` parameter required before the function runs (the function opens the ticket), and that
    method only."""
    stand_in, client = served
    with httpx2.Client(base_url=str(client.base_url), trust_env=False, timeout=20) as browser:
        missing = browser.get("/follow/t-1")
        assert (missing.status_code, missing.json()) == (
            400,
            {"message": "Missing required request parameters: [ticket]"},
        )
        assert browser.post("/follow/t-1?ticket=x").status_code == 403
        assert browser.get("/api/v1/mesh/t-1/events?ticket=x").status_code == 403, "the events route takes no ticket"
        stand_in.acknowledged.set()
        with browser.stream("GET", "/follow/t-1?ticket=x", headers={"Last-Event-ID": "7"}) as response:
            assert response.headers["content-type"] == "text/event-stream"
            events = [json.loads(event.data) for event in httpx2.EventSource(response)]
    assert events[-1]["status"] == "succeeded"
    assert stand_in.opened == [("t-1", "7")]


def test_a_ticket_s_stream_ends_once_its_ticket_lapses_as_the_reconnect_on_aws_is_refused() -> None:
    """Locally a stream runs as long as its task; a ticket's ends when the ticket lapses, so a page that
    does not renew it stops following here as on AWS (its next reconnect is a 401 there and here)."""
    lapsed = {"statusCode": 401, "headers": {"Content-Type": "application/json"}, "body": '{"reason": "x"}'}
    checks: list[str] = []

    def sign_in(_event: dict[str, Any]) -> Any:
        checks.append("checked")
        return lapsed if len(checks) > 2 else None  # the stream's opening and its first chunk: still good

    stand_in = StandIn()
    stand_in.acknowledged.set()
    with serving() as (server, client):
        server.gateway.open_event_stream = stand_in.open_event_stream
        server.gateway.sign_in = sign_in
        with client.stream("GET", "/follow/t-1?ticket=good") as response:
            body = "".join(response.iter_text())
        assert stand_in.stream_closed.wait(5), "the task's stream was closed"
    assert response.status_code == 200
    assert body == 'id: 1\nevent: status\ndata: {"status": "running"}\n\n', "nothing after the lapse"


def test_a_refused_ticket_is_answered_with_the_allowed_origin_so_the_page_reads_why() -> None:
    """As the function answers on AWS (`GatewayFunction.handle`): a stream refused before it opens (the
    function's `sign_in` refusing the ticket) names the page's allowed origin; another origin's, none."""
    page = "https://app.example.com"
    refusal = {"statusCode": 401, "headers": {"Content-Type": "application/json"}, "body": '{"reason": "x"}'}
    with serving(environment={"ASYA_GATEWAY_CORS_ORIGINS": page}) as (server, client):
        server.gateway.open_event_stream = StandIn().open_event_stream
        server.gateway.sign_in = lambda _event: refusal
        allowed = client.get("/follow/t-1?ticket=forged", headers={"Origin": page})
        other = client.get("/follow/t-1?ticket=forged", headers={"Origin": "https://evil.example.net"})
    assert (allowed.status_code, allowed.headers["access-control-allow-origin"]) == (401, page)
    assert other.status_code == 401
    assert "access-control-allow-origin" not in other.headers
