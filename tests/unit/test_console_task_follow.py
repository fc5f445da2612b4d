"""A task's page follows the task from the gateway, with a follow ticket the console got for it, when
the gateway allows the page's origin (`asya up`'s console); it fetches the task's fragments from the
console at each status event. Where the gateway does not allow the page's origin, the console relays
the gateway's events as before. The browser holds the ticket, never the console's credential."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from asya_cdk.loading import load_mesh
from asya_local.console.app import Console
from asya_local.console.topology import Topology
from asya_local.gateway_client import GatewayError
from tests.support.console_client import OWN_ORIGIN, console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats

FOLLOW = "http://127.0.0.1:9/follow/t1?ticket=sealed"


class TicketGateway(FakeGateway):
    """The fake gateway, handing out follow tickets (or refusing them, as an older gateway's 404)."""

    def __init__(self, gives: bool = True) -> None:
        super().__init__()
        self.gives = gives
        self.tickets: list[str] = []

    def follow_ticket(self, task_id: str) -> dict[str, Any]:
        self.tickets.append(task_id)
        if not self.gives:
            raise GatewayError("404: Not found", 404)
        return {"ticket": "sealed", "follow_url": FOLLOW.replace("t1", task_id)}


def client_of(gateway: FakeGateway, origins: tuple[str, ...]) -> FlaskClient:
    topology = Topology.of_mesh(load_mesh(REVIEWS))
    console = Console(topology, FixedStats(), gateway, "the local stack", refresh=0.01, gateway_origins=origins)  # type: ignore[arg-type]
    return console_client(console)


def test_a_running_tasks_page_follows_it_from_the_gateway_with_a_ticket() -> None:
    gateway = TicketGateway()
    page = client_of(gateway, (OWN_ORIGIN,)).get("/tasks/t1").get_data(as_text=True)
    assert f'data-follow="{FOLLOW.replace("&", "&amp;")}"' in page
    assert 'data-follow-live="/tasks/t1/live"' in page
    assert 'data-follow-relay="/events/tasks/t1"' in page, "where it goes if the gateway refuses the page"
    assert "data-live=" not in page, "nothing relayed through the console"
    assert gateway.tickets == ["t1"]


def test_an_ended_tasks_page_asks_for_no_ticket() -> None:
    gateway = TicketGateway()
    page = client_of(gateway, (OWN_ORIGIN,)).get("/tasks/t3").get_data(as_text=True)
    assert "data-follow=" not in page
    assert gateway.tickets == []


@pytest.mark.parametrize(
    ("origins", "gives"), [((), True), (("http://127.0.0.1:5000",), True), ((OWN_ORIGIN,), False)], ids=str
)
def test_a_page_the_gateway_would_not_let_follow_is_relayed_by_the_console(
    origins: tuple[str, ...], gives: bool
) -> None:
    """The gateway does not allow the page's origin (`asya console`, a deployed mesh), or gives no
    ticket (an older gateway): the console relays the task's events, as before."""
    page = client_of(TicketGateway(gives), origins).get("/tasks/t1").get_data(as_text=True)
    assert 'data-live="/events/tasks/t1"' in page
    assert "data-follow=" not in page


def test_a_status_event_fetches_the_tasks_fragments_and_an_ended_task_ends_them() -> None:
    client = client_of(TicketGateway(), (OWN_ORIGIN,))
    running = client.get("/tasks/t1/live").get_json()
    assert [name for name, _ in running] == ["task", "route"]
    assert json.loads(dict(running)["route"]) == {"split": "visited", "score": "current", "triage": "next"}
    assert "score" in dict(running)["task"]
    ended = client.get("/tasks/t3/live").get_json()
    assert [name for name, _ in ended] == ["why", "task", "route", "end"]
    assert "ValueError" in dict(ended)["why"]


def test_a_lapsed_ticket_is_renewed_through_the_console() -> None:
    gateway = TicketGateway()
    client = client_of(gateway, (OWN_ORIGIN,))
    assert client.get("/tasks/t2/ticket").get_json() == {"follow_url": FOLLOW.replace("t1", "t2")}
    refused = client_of(TicketGateway(), ()).get("/tasks/t2/ticket")
    assert (refused.status_code, refused.get_json()) == (404, {"follow_url": None})


def test_the_relay_sends_fly_events_as_json_the_page_shows_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The relay's FLY events are the gateway's own data, which the page writes as text (never HTML)."""
    gateway = TicketGateway()
    events = [("fly", {"actor": "score", "data": "<b>half</b>"}), ("status", gateway.known["t3"])]
    monkeypatch.setattr("asya_local.console.app.followed", lambda _gateway, _task_id: iter(events))
    sent = b"".join(client_of(gateway, ()).get("/events/tasks/t3").response).decode()  # type: ignore[arg-type]
    fly = sent[sent.index("event: fly") :].split("\n\n")[0]
    assert json.loads(fly.split("data: ", 1)[1]) == {"actor": "score", "data": "<b>half</b>"}
    assert sent.index("event: why") < sent.index("event: end")
