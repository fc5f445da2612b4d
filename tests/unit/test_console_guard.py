"""The console refuses what a web page could do through the operator's browser (security review,
section 10): a request without the session token, a foreign Host (DNS rebinding), a form posted
from another site or without its CSRF field. Nothing refused reaches the gateway."""

from __future__ import annotations

import re

import pytest
from flask.testing import FlaskClient

from asya_cdk.loading import load_mesh
from asya_local.console.app import Console, create_app
from asya_local.console.guard import csrf_token
from asya_local.console.topology import Topology
from tests.support.console_client import OWN_ORIGIN, TOKEN, console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def console(gateway: FakeGateway) -> Console:
    return Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), gateway, "here")  # type: ignore[arg-type]


def test_a_request_without_the_token_is_refused_with_a_line_that_says_why(console: Console) -> None:
    client = create_app(console, TOKEN).test_client()
    for answer in (client.get("/tasks"), client.get("/tasks?token=guessed"), client.post("/tasks/t1/cancel")):
        assert answer.status_code == 403
        assert answer.get_data(as_text=True).startswith("This console needs its session token: open the URL")


def test_the_tokened_url_sets_a_strict_http_only_cookie_that_then_suffices(console: Console) -> None:
    client = create_app(console, TOKEN).test_client()
    opened = client.get(f"/?token={TOKEN}")
    assert opened.status_code == 200
    cookie = opened.headers["Set-Cookie"]
    assert cookie.startswith(f"asya_console_80={TOKEN};")
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert client.get("/tasks").status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "localhost:8080", "127.0.0.1.evil.example"])
def test_a_foreign_host_is_refused_even_with_the_token(console: Console, host: str) -> None:
    answer = console_client(console).get(f"/tasks?token={TOKEN}", headers={"Host": host})
    assert answer.status_code == 400
    assert "answers only to 127.0.0.1, localhost or [::1]" in answer.get_data(as_text=True)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1:80", "[::1]:80"])
def test_the_loopback_names_at_the_consoles_port_are_answered(console: Console, host: str) -> None:
    client = create_app(console, TOKEN).test_client()
    assert client.get(f"/tasks?token={TOKEN}", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://localhost:8080"},
        {"Referer": "http://evil.example/page"},
    ],
)
def test_a_cross_site_form_is_refused_and_cancels_nothing(
    console: Console, gateway: FakeGateway, headers: dict[str, str]
) -> None:
    client = console_client(console)
    client.environ_base.pop("HTTP_ORIGIN")
    answer = client.post("/tasks/t1/cancel", headers=headers)
    assert answer.status_code == 403
    assert "must come from one of its own pages" in answer.get_data(as_text=True)
    assert gateway.canceled == []


def test_a_form_without_its_csrf_field_is_refused_even_from_the_consoles_origin(
    console: Console, gateway: FakeGateway
) -> None:
    client = console_client(console)
    refused = FlaskClient.post(client, "/tasks/t1/cancel", data={"csrf": "made-up"})
    assert refused.status_code == 403
    assert gateway.canceled == []
    assert client.post("/tasks/t1/cancel").status_code == 303
    assert gateway.canceled == ["t1"]
    client.environ_base.pop("HTTP_ORIGIN")  # a browser that sends no Origin sends its Referer
    assert client.post("/tasks/t1/cancel", headers={"Referer": f"{OWN_ORIGIN}/tasks/t1"}).status_code == 303
    assert client.post("/tasks/t1/cancel").status_code == 403, "neither Origin nor Referer"
    assert gateway.canceled == ["t1", "t1"]


def test_every_form_on_the_pages_carries_the_csrf_field(console: Console) -> None:
    client = console_client(console)
    field = f'<input type="hidden" name="csrf" value="{csrf_token(TOKEN)}">'
    for path in ("/", "/tasks/t1", "/tasks/t3", "/sump/e1"):
        page = client.get(path).get_data(as_text=True)
        forms = re.findall(r'<form method="post".*?</form>', page, re.DOTALL)
        assert forms, path
        assert all(field in form for form in forms), path
