"""A browser follows a task (docs/callers.md, "Browsers"), in headless Chromium (Debian's, driven by
Playwright) against the local stack: a plain page of an allowed origin opens `new EventSource(url)`
with the follow ticket the task's owner got, and sees the task's FLY events and its end; a page of an
origin not allowed, or with a forged ticket, reads nothing; the console's task page follows a task
from the gateway itself, not through the console. Events are waited for generously: how fast they
come is not what is tested."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from asya_local.console.activity import ActivityCounter
from asya_local.console.local import LocalMesh, local_console
from asya_local.console.server import ConsoleServer, origin, serve
from asya_local.endpoint.process import LocalEndpoint, free_port
from asya_local.gateway_client import GatewayClient
from asya_local.stack import LocalStack
from tests.integration.test_console_browser import CHROMIUM, CHROMIUM_FLAGS
from tests.support.stack import deployed

pytestmark = pytest.mark.integration
MESH = Path(__file__).resolve().parent / "mesh" / "browser.yaml"
WAIT_MS = 90_000
# A page's script: follow the URL with an EventSource, and answer what it saw once the task ends, or
# once the browser gives up on the stream (an error that closes it: refused, or not readable here).
FOLLOW = """([url, wait]) => new Promise((resolve) => {
  const seen = [];
  const source = new EventSource(url);
  const done = (how) => { source.close(); resolve({seen, how}); };
  source.addEventListener("fly", (event) => seen.push(["fly", JSON.parse(event.data).data]));
  source.addEventListener("status", (event) => {
    const status = JSON.parse(event.data).status;
    seen.push(["status", status]);
    if (["succeeded", "failed", "canceled"].includes(status)) done("ended");
  });
  source.addEventListener("error", () => { if (source.readyState === EventSource.CLOSED) done("closed"); });
  setTimeout(() => done("timed out"), wait);
})"""


class _Blank(BaseHTTPRequestHandler):
    """An empty page: what matters is the origin it is served from."""

    def do_GET(self) -> None:
        body = b"<!doctype html><title>a page</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def pages() -> Iterator[tuple[str, str]]:
    """Two pages' origins: one the gateway allows, one it does not."""
    servers = [ThreadingHTTPServer(("127.0.0.1", free_port()), _Blank) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield origin(servers[0].server_address[1]), origin(servers[1].server_address[1])
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def console_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def stack(endpoint: LocalEndpoint, pages: tuple[str, str], console_port: int) -> Iterator[LocalStack]:
    allowed = (pages[0], origin(console_port))  # as `asya up` allows its console's
    with deployed(endpoint, MESH, lambda _source, _line: None, browser_origins=allowed) as started:
        yield started


@pytest.fixture(scope="module")
def gateway(stack: LocalStack) -> GatewayClient:
    return stack.gateway_client()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), f"no Chromium at {CHROMIUM}: `make install` installs Debian's chromium package"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


def _follow_from(browser: Browser, page_origin: str, url: str) -> dict[str, Any]:
    page = browser.new_page()
    try:
        page.goto(f"{page_origin}/")
        seen: dict[str, Any] = page.evaluate(FOLLOW, [url, WAIT_MS])
        return seen
    finally:
        page.close()


def _ticking(gateway: GatewayClient, ticks: int) -> str:
    return str(gateway.create_task({"flow": "ticks", "payload": {"ticks": ticks}})["id"])


def test_a_page_of_an_allowed_origin_follows_a_running_task_with_its_ticket(
    browser: Browser, gateway: GatewayClient, pages: tuple[str, str]
) -> None:
    task_id = _ticking(gateway, 4)
    ticket = gateway.follow_ticket(task_id)
    assert ticket["follow_url"].startswith(f"{gateway.url}/follow/{task_id}?ticket=")
    followed = _follow_from(browser, pages[0], ticket["follow_url"])
    assert followed["how"] == "ended", followed
    ticks = [data["tick"] for kind, data in followed["seen"] if kind == "fly"]
    assert ticks, followed
    assert ticks == sorted(ticks), followed
    assert followed["seen"][-1] == ["status", "succeeded"]


def test_a_page_of_another_origin_or_with_a_forged_ticket_reads_nothing(
    browser: Browser, gateway: GatewayClient, pages: tuple[str, str]
) -> None:
    task_id = _ticking(gateway, 2)
    url = gateway.follow_ticket(task_id)["follow_url"]
    elsewhere = _follow_from(browser, pages[1], url)
    assert (elsewhere["how"], elsewhere["seen"]) == ("closed", []), "the browser keeps the stream from the page"
    forged = re.sub(r"ticket=.{8}", "ticket=AAAAAAAA", url)
    refused = _follow_from(browser, pages[0], forged)
    assert (refused["how"], refused["seen"]) == ("closed", []), "the gateway refuses the ticket"


@pytest.fixture(scope="module")
def console(stack: LocalStack, console_port: int) -> Iterator[ConsoleServer]:
    mesh = LocalMesh.of_stack(stack)
    served = serve(
        local_console(mesh, ActivityCounter(stack.namespace), gateway_origins=(origin(console_port),)), console_port
    )
    yield served
    served.stop()


def test_the_consoles_task_page_follows_the_task_from_the_gateway(
    browser: Browser, gateway: GatewayClient, console: ConsoleServer
) -> None:
    page = browser.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    try:
        page.goto(console.opening_url)
        task_id = _ticking(gateway, 5)
        page.goto(f"{console.url}/tasks/{task_id}")
        expect(page.locator("#fly li").first).to_contain_text('"tick"', timeout=WAIT_MS)
        expect(page.locator("#fly .fly-actor").first).to_have_text("ticking")
        expect(page.locator("#task-state .status").first).to_have_text("succeeded", timeout=WAIT_MS)
    finally:
        page.close()
    assert any(url.startswith(f"{gateway.url}/follow/{task_id}?ticket=") for url in requested), requested
    assert not [url for url in requested if "/events/tasks/" in url], "nothing relayed through the console"
    assert any(url.startswith(f"{console.url}/tasks/{task_id}/live") for url in requested), "fragments fetched"
