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
def client() -> FlaskClient:
    console = Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), FakeGateway(), "here")  # type: ignore[arg-type]
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


def test_the_start_forms_payload_shows_every_line_of_the_example(client: FlaskClient) -> None:
    """The reviews' example is 7 lines of JSON: 6 rows clipped its last."""
    page = client.get("/").get_data(as_text=True)
    box = re.search(r'<textarea id="payload" name="payload" rows="(\d+)"[^>]*>([^<]*)</textarea>', page, re.S)
    assert box is not None
    assert int(box.group(1)) > box.group(2).count("\n") + 1, "every line, and one to type on"
