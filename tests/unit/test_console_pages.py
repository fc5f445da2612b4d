"""What a newcomer trips on in the console's pages: a URL it has no page at is answered by a page of the
console, not Werkzeug's bare one; the start form shows its payload whole."""

from __future__ import annotations

import re

import pytest
from flask.testing import FlaskClient

from asya_cdk.loading import load_mesh
from asya_local.console.app import Console
from asya_local.console.topology import Topology
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def client(gateway: FakeGateway) -> FlaskClient:
    console = Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), gateway, "here")  # type: ignore[arg-type]
    return console_client(console)


def test_an_unknown_actor_is_named_with_the_closest_and_every_actor_of_the_mesh(client: FlaskClient) -> None:
    answer = client.get("/actors/scroe")
    page = answer.get_data(as_text=True)
    assert answer.status_code == 404
    assert "The mesh has no actor &#39;scroe&#39;." in page
    assert 'Did you mean <a href="/actors/score">score</a>?' in page
    for actor in ("split", "triage", "summarise", "x-sump"):
        assert f'<a href="/actors/{actor}">{actor}</a>' in page
    assert '<link rel="stylesheet" href="/static/console.css">' in page, "styled as the other pages"
    nothing_close = client.get("/actors/zzzz").get_data(as_text=True)
    assert "Did you mean" not in nothing_close


def test_any_other_unknown_url_is_a_page_of_the_console(client: FlaskClient) -> None:
    answer = client.get("/task/t1")
    page = answer.get_data(as_text=True)
    assert answer.status_code == 404
    assert "The console has no page at /task/t1." in page
    assert '<a href="/tasks">tasks</a>' in page
    assert '<link rel="stylesheet" href="/static/console.css">' in page
    assert "Not Found</h1>" not in page


def _rows_and_lines(page: str, box_id: str) -> tuple[int, int]:
    box = re.search(rf'<textarea id="{box_id}" name="payload" rows="(\d+)"[^>]*>([^<]*)</textarea>', page, re.S)
    assert box is not None
    return int(box.group(1)), box.group(2).count("\n") + 1


def test_a_payloads_box_shows_every_line_of_it(client: FlaskClient, gateway: FakeGateway) -> None:
    """The reviews' example is 7 lines of JSON, a task's input as long: 6 rows clipped the last."""
    rows, lines = _rows_and_lines(client.get("/").get_data(as_text=True), "payload")
    assert rows > lines, "the start form's: every line, and one to type on"
    gateway.known["t3"]["input"] = {"product": "lamp-2", "reviews": ["fine", "", "broke"], "more": {"a": 1}}
    rows, lines = _rows_and_lines(client.get("/tasks/t3").get_data(as_text=True), "rerun-payload")
    assert rows > lines > 6, "run again's too"


def test_the_pages_name_their_icon_so_no_browser_asks_for_a_favicon_that_is_not_there(client: FlaskClient) -> None:
    """A browser asks for /favicon.ico on every page that names no icon: a 404 each time (the review's eighth)."""
    page = client.get("/").get_data(as_text=True)
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200
    assert icon.get_data(as_text=True).startswith("<svg")
