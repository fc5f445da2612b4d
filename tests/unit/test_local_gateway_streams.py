"""The local API Gateway stand-in's event streams, served in its own process rather than by the function:
written chunk by chunk, A2A's streams apart from its other requests, the open routes (the agent card, a
follow ticket's stream), a stream that cannot open or that the function refuses."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx2

from asya_local.functions.gateway_server import GatewayServer
from tests.support.local_gateway import StandIn, serving


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
    served: tuple[StandIn, httpx2.Client], local_api: tuple[GatewayServer, httpx2.Client]
) -> None:
    """`open_a2a_stream` decides: chunks are streamed, a dict is its JSON-RPC refusal, None goes on to
    the function (which here echoes its proxy event)."""
    _, client = served
    server, _ = local_api
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
