"""`asya`'s gateway client against a scripted server: tasks created and read, and a followed task's
events across reconnections (`Last-Event-ID`, the server's `retry:`), as on AWS where each response is
a bounded batch."""

from __future__ import annotations

import json

import httpx2
import pytest

from asya_local.gateway_client import GatewayClient, GatewayError, GatewayUnreachableError


def status(state: str, progress: float) -> str:
    return json.dumps({"id": "t-1", "status": state, "progress": progress, "terminal": state == "succeeded"})


class Server:
    """Answers the events route from a list of bodies, one per connection, and records requests."""

    def __init__(self, bodies: list[str]) -> None:
        self.bodies = bodies
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if request.url.path == "/api/v1/mesh" and request.method == "POST":
            return httpx2.Response(201, json={"id": "t-1", **json.loads(request.content)})
        if request.url.path == "/api/v1/mesh/missing":
            return httpx2.Response(404, json={"statusCode": 404, "message": "no task 'missing'"})
        if request.url.path.endswith("/events"):
            if "missing" in request.url.path:
                return httpx2.Response(404, json={"statusCode": 404, "message": "no task 'missing'"})
            return httpx2.Response(200, headers={"Content-Type": "text/event-stream"}, text=self.bodies.pop(0))
        return httpx2.Response(200, text=status("running", 50))


def client(server: Server, slept: list[float] | None = None) -> GatewayClient:
    pause = slept.append if slept is not None else (lambda _seconds: None)
    return GatewayClient("http://gateway", "key", transport=httpx2.MockTransport(server), sleep=pause)


def test_a_task_is_created_with_the_api_key() -> None:
    server = Server([])
    answer = client(server).create_task({"flow": "f", "payload": {}})
    assert answer == {"id": "t-1", "flow": "f", "payload": {}}
    assert server.requests[0].headers["x-api-key"] == "key"


def test_an_unknown_task_is_none() -> None:
    assert client(Server([])).task("missing") is None
    assert client(Server([])).task("t-1") == json.loads(status("running", 50))


def test_following_reconnects_after_the_last_event_until_the_task_ends() -> None:
    server = Server(
        [
            f'id: 1\nevent: status\ndata: {status("running", 10)}\n\nid: 2\nevent: fly\ndata: "hi"\n\nretry: 500\n\n',
            ": keep-alive\n\n",
            f"id: 3\nevent: status\ndata: {status('succeeded', 100)}\n\n",
        ]
    )
    events = list(client(server).follow("t-1"))
    assert events == [
        ("status", json.loads(status("running", 10))),
        ("fly", "hi"),
        ("status", json.loads(status("succeeded", 100))),
    ]
    assert [request.headers.get("Last-Event-ID") for request in server.requests] == [None, "2", "2"]


def test_following_an_unknown_task_says_so() -> None:
    with pytest.raises(GatewayError, match="404: no task 'missing'"):
        list(client(Server([])).follow("missing"))


def test_nothing_listening_is_unreachable() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    gateway = GatewayClient("http://gateway", "key", transport=httpx2.MockTransport(refuse))
    with pytest.raises(GatewayUnreachableError):
        gateway.task("t-1")
    with pytest.raises(GatewayUnreachableError):
        list(gateway.follow("t-1"))


def test_the_reconnect_delay_is_the_servers() -> None:
    slept: list[float] = []
    server = Server(["retry: 1500\n\n", f"event: status\ndata: {status('succeeded', 100)}\n\n"])
    list(client(server, slept).follow("t-1"))
    assert slept == [1.5]


def test_answers_other_than_expected_are_errors() -> None:
    def unhappy(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(422, json={"statusCode": 422, "message": "payload: field required"})

    gateway = GatewayClient("http://gateway", "key", transport=httpx2.MockTransport(unhappy))
    with pytest.raises(GatewayError, match="422: payload: field required"):
        gateway.create_task({})


def test_a_rerun_sends_a_payload_only_when_one_is_given() -> None:
    sent: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(201, json={"id": "t-2", "task": {"id": "t-2", "rerun_of": "t-1"}})

    gateway = GatewayClient("http://gateway", "key", transport=httpx2.MockTransport(answer))
    assert gateway.rerun("t-1")["task"]["rerun_of"] == "t-1"
    gateway.rerun("t-1", None, given=True)  # JSON null is an input of its own
    assert [(r.url.path, json.loads(r.content)) for r in sent] == [
        ("/api/v1/mesh/t-1/rerun", {}),
        ("/api/v1/mesh/t-1/rerun", {"payload": None}),
    ]
