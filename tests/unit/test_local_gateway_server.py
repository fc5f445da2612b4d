"""The local API Gateway stand-in, served in this process on loopback, its function run in execution
environments (child processes, `tests.support.gateway_stand_in`): the API key rule, the function's
answers and failures, one invocation at a time per environment, environments replaced when they end
and stopped with the server, and requests framed wrong or past API Gateway's and Lambda's limits. Its
event streams: `test_local_gateway_streams`."""

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
from pathlib import Path
from typing import Any

import httpx2
import pytest

from asya_local.endpoint.process import free_port
from asya_local.functions.environments import Environments
from tests.support.local_gateway import KEY, SPEC, StandIn, serving


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
