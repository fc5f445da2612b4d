"""A browser follows a task with a ticket (docs/callers.md, "Browsers"): the task's owner asks for one
with an authorized call, and the stream it names opens without any credential, for that task only,
read-only, for a few minutes, as the caller it was handed to. Through the gateway's function as API
Gateway hands it requests: IAM-signed ones, and the ticket's stream, which carries no identity."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from asya_gateway import api, follow_routes
from asya_gateway.callers import AuthSettings, Caller
from asya_gateway.cursors import CursorKey
from asya_gateway.settings import GatewaySettings
from asya_gateway.tickets import KEY_INFO, TICKET_SECONDS, FollowTickets, TicketRefusedError
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import HttpRequest, HttpResponse, http_response, proxy_event
from asya_local.testing.tables import EVENTS, TASKS
from tests.support.gateway_unit import function_on_moto

ACCOUNT = "arn:aws:iam::111122223333"
ANA, BO = f"{ACCOUNT}:user/ana", f"{ACCOUNT}:user/bo"
ADMIN_ROLE = "arn:aws:sts::111122223333:assumed-role/MeshAdmin"
ADMIN = f"{ADMIN_ROLE}/cy"
PAGE = "https://app.example.com"
SIGN_IN = AuthSettings(mode="jwt", jwt={"issuer": "https://login.example.com/mesh", "audiences": ["asya-api"]})


def send(
    method: str, target: str, principal: str | None = None, headers: tuple[tuple[str, str], ...] = ()
) -> HttpResponse:
    """A request as API Gateway hands it over: signed by `principal`, or with no identity at all (a
    browser's EventSource on the ticket's route, which takes no authorization)."""
    event = proxy_event(HttpRequest(method, target, [("Host", "127.0.0.1:9"), *headers]), "unit")
    event["requestContext"]["identity"]["userArn"] = principal
    return http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))


def body(response: HttpResponse) -> Any:
    return orjson.loads(response.body)


def sse_events(response: HttpResponse) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) of each SSE event of a stream's answer."""
    found = []
    for block in response.body.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "data" in fields:
            found.append((fields.get("event", "message"), orjson.loads(fields["data"])))
    return found


def create(principal: str) -> str:
    event = proxy_event(
        HttpRequest("POST", "/api/v1/mesh", [("content-type", "application/json")], b'{"route":["a"],"payload":1}'),
        "unit",
    )
    event["requestContext"]["identity"]["userArn"] = principal
    answer = http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))
    assert answer.status == 201, answer.body
    return str(body(answer)["id"])


def ticket_for(task_id: str, principal: str) -> dict[str, Any]:
    answer = send("POST", f"/api/v1/mesh/{task_id}/ticket", principal)
    assert answer.status == 200, answer.body
    return dict(body(answer))


def followed(url: str, headers: tuple[tuple[str, str], ...] = ()) -> HttpResponse:
    """GET the ticket's URL as a browser would: no credential, no identity."""
    parts = urlsplit(url)
    return send("GET", f"{parts.path}?{parts.query}", None, headers)


def settings(**more: Any) -> GatewaySettings:
    auth = more.pop("auth", AuthSettings(mode="iam", admin_principals=(f"{ADMIN_ROLE}/*",)))
    return GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS, auth=auth, **more)


@pytest.fixture
def iam_mesh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A follow of a task that does not end answers after a second, not after a Lambda answer's 20 s."""
    monkeypatch.setattr(follow_routes, "LAMBDA_FOLLOW_SECONDS", 1.0)
    with function_on_moto(settings(cors_origins=(PAGE,))):
        yield


def test_the_owner_gets_a_ticket_and_a_browser_follows_the_task_with_it_alone(iam_mesh: None) -> None:
    task_id = create(ANA)
    ticket = ticket_for(task_id, ANA)
    assert ticket["follow_url"] == f"http://127.0.0.1:9/follow/{task_id}?ticket={ticket['ticket']}"
    assert ticket["expires_at"].endswith("Z")
    stream = followed(ticket["follow_url"])
    assert stream.status == 200, stream.body
    assert dict(stream.headers)["Content-Type"] == "text/event-stream"
    events = sse_events(stream)
    assert events[0][0] == "status"
    assert (events[0][1]["id"], events[0][1]["status"]) == (task_id, "pending")


def test_the_same_request_without_a_ticket_sees_nothing(iam_mesh: None) -> None:
    task_id = create(ANA)
    refused = send("GET", f"/follow/{task_id}")
    assert refused.status == 401
    assert body(refused)["reason"] == "missing_ticket"
    # the task's own events route takes no ticket: unsigned, it is nobody's request, and nobody's task
    ticket = ticket_for(task_id, ANA)["ticket"]
    assert send("GET", f"/api/v1/mesh/{task_id}/events?ticket={ticket}").status == 404


def test_a_ticket_opens_its_own_task_only(iam_mesh: None) -> None:
    mine, other = create(ANA), create(ANA)
    ticket = ticket_for(mine, ANA)["ticket"]
    refused = send("GET", f"/follow/{other}?ticket={ticket}")
    assert (refused.status, body(refused)["reason"]) == (401, "invalid_ticket")


def test_a_tampered_ticket_is_refused(iam_mesh: None) -> None:
    task_id = create(ANA)
    ticket = ticket_for(task_id, ANA)["ticket"]
    flipped = ticket[:20] + ("A" if ticket[20] != "A" else "B") + ticket[21:]
    for forged in (flipped, ticket[:-4], "not-a-ticket", "%%%"):
        refused = send("GET", f"/follow/{task_id}?ticket={forged}")
        assert (refused.status, body(refused)["reason"]) == (401, "invalid_ticket"), forged


def test_a_ticket_reads_only_its_stream(iam_mesh: None) -> None:
    """No other method on the ticket's path, and no other route, takes it: the stream is all it opens."""
    task_id = create(ANA)
    ticket = ticket_for(task_id, ANA)["ticket"]
    for method in ("POST", "DELETE"):
        assert send(method, f"/follow/{task_id}?ticket={ticket}").status in (401, 403, 404, 405), method
    for method, path in (("GET", f"/api/v1/mesh/{task_id}"), ("DELETE", f"/api/v1/mesh/{task_id}")):
        assert send(method, f"{path}?ticket={ticket}").status == 404, (method, path)
    assert send("GET", f"/api/v1/mesh?ticket={ticket}").status == 200  # an unsigned list: nobody's, empty
    assert body(send("GET", f"/api/v1/mesh?ticket={ticket}"))["tasks"] == []


def test_another_callers_task_has_no_ticket_and_an_admin_gets_one_for_any(iam_mesh: None) -> None:
    task_id = create(ANA)
    refused = send("POST", f"/api/v1/mesh/{task_id}/ticket", BO)
    assert (refused.status, body(refused)["message"]) == (404, f"no task {task_id!r}")
    stream = followed(ticket_for(task_id, ADMIN)["follow_url"])
    assert (stream.status, sse_events(stream)[0][1]["id"]) == (200, task_id)


def test_a_reconnect_with_last_event_id_keeps_following_with_the_ticket(iam_mesh: None) -> None:
    task_id = create(ANA)
    url = ticket_for(task_id, ANA)["follow_url"]
    first = followed(url)
    cursor = next(line[4:] for line in first.body.decode().splitlines() if line.startswith("id: "))
    again = followed(url, (("Last-Event-ID", cursor),))
    assert again.status == 200, again.body
    assert "retry:" in again.body.decode()


def test_the_stream_and_its_preflight_answer_an_allowed_origin_only(iam_mesh: None) -> None:
    task_id = create(ANA)
    url = ticket_for(task_id, ANA)["follow_url"]
    allowed = dict(followed(url, (("Origin", PAGE),)).headers)
    assert allowed["Access-Control-Allow-Origin"] == PAGE
    assert "Access-Control-Allow-Origin" not in dict(followed(url, (("Origin", "https://evil.example.net"),)).headers)
    asked = (
        ("Origin", PAGE),
        ("Access-Control-Request-Method", "GET"),
        ("Access-Control-Request-Headers", "last-event-id"),
    )
    preflight = send("OPTIONS", f"/follow/{task_id}", None, asked)
    assert (preflight.status, dict(preflight.headers)["Access-Control-Allow-Origin"]) == (204, PAGE)
    refused = send("GET", f"/follow/{task_id}", None, (("Origin", PAGE),))
    assert (refused.status, dict(refused.headers)["Access-Control-Allow-Origin"]) == (401, PAGE)


def test_with_sign_in_the_ticket_stands_in_for_the_token() -> None:
    with function_on_moto(settings(auth=SIGN_IN)) as service:
        ticket, _ = api.lambda_handler.built.tickets.issue("t-1", Caller(owner="jwt:ana"))
        service.tasks.create({"id": "t-1", "route": {"prev": [], "curr": "a", "next": []}, "owner": "jwt:ana"})
        assert send("GET", "/api/v1/mesh/t-1/events").status == 401  # no token
        stream = send("GET", f"/follow/t-1?ticket={ticket}")
        assert (stream.status, sse_events(stream)[0][1]["id"]) == (200, "t-1")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_ticket_lapses_after_its_minutes() -> None:
    clock = Clock()
    tickets = FollowTickets(CursorKey(None, info=KEY_INFO), clock)
    ticket, expires = tickets.issue("t-1", Caller(owner="iam:ana"))
    assert expires == clock.now + TICKET_SECONDS
    clock.now += TICKET_SECONDS - 1
    assert tickets.open(ticket, "t-1") == Caller(owner="iam:ana")
    clock.now += 1
    with pytest.raises(TicketRefusedError) as lapsed:
        tickets.open(ticket, "t-1")
    assert lapsed.value.reason == "expired_ticket"


def test_a_ticket_is_no_cursor_and_a_cursor_no_ticket() -> None:
    """The tickets' key and the cursors' are derived from one secret for different ends."""
    secret = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:cursors"
    read = {secret: "s3cret"}.__getitem__
    tickets = FollowTickets(CursorKey(secret, read, info=KEY_INFO))
    ticket, _ = tickets.issue("t-1", Caller(owner="iam:ana"))
    assert tickets.open(ticket, "t-1").owner == "iam:ana"
    cursors = CursorKey(secret, read).bound(Caller(owner="iam:ana"))
    with pytest.raises(TicketRefusedError):
        FollowTickets(CursorKey(secret, read)).open(ticket, "t-1")
    with pytest.raises(Exception, match="cursor is not one"):
        cursors.open(ticket, None)
