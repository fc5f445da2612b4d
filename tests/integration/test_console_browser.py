"""The console in a real browser (headless Chromium, Debian's, driven by Playwright) against the local
stack: the graph renders, a task started from the page travels and shows its result live, cancel
works, x-sump's entries are shown, the page works by keyboard and in a narrow window, and nothing is
fetched from anywhere but the console itself."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx2
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from asya_local.console.activity import ActivityCounter
from asya_local.console.local import LocalMesh, local_console
from asya_local.console.server import ConsoleServer, serve
from asya_local.gateway_client import GatewayClient
from asya_local.worklog import WorkerLog
from tests.support.stack import RunningMesh

pytestmark = pytest.mark.integration
CHROMIUM = Path(os.environ.get("ASYA_CHROMIUM", "/usr/bin/chromium"))
# as the machine's notes ask: no sandbox as root, and none of Chromium's own calls out (refused here)
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TERMINAL = re.compile(r"succeeded|failed|canceled")


@pytest.fixture(scope="module")
def worker_log(tmp_path_factory: pytest.TempPathFactory, running_mesh: RunningMesh) -> Iterator[Path]:
    """The workers' lines in a worker log, as `asya up` keeps one (the console reads a task's lines)."""
    path = tmp_path_factory.mktemp("console") / "mesh.log"
    log = WorkerLog(path, on_error=lambda _source, _line: None)

    def take(line: str) -> None:
        log("worker", line)

    running_mesh.taps.append(take)
    yield path
    running_mesh.taps.remove(take)
    log.close()


@pytest.fixture(scope="module")
def served(running_mesh: RunningMesh, worker_log: Path) -> Iterator[ConsoleServer]:
    activity = ActivityCounter(running_mesh.stack.namespace)
    running_mesh.taps.append(activity.take)
    console = serve(local_console(LocalMesh.of_stack(running_mesh.stack, worker_log), activity))
    yield console
    console.stop()
    running_mesh.taps.remove(activity.take)


@pytest.fixture(scope="module")
def console_url(served: ConsoleServer) -> str:
    """Where the pages are; a page opened by `_signed_in` has the session cookie they ask for."""
    return served.url


def _signed_in(browser: Browser, served: ConsoleServer, **options: Any) -> Page:
    """A new page (a new browser context) that opened the console's URL with its token, as a person
    opens the one `asya up` prints."""
    opened = browser.new_page(**options)
    opened.goto(served.opening_url)
    return opened


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), f"no Chromium at {CHROMIUM}: `make install` installs Debian's chromium package"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, served: ConsoleServer, console_url: str) -> Iterator[Page]:
    opened = _signed_in(browser, served, viewport={"width": 1280, "height": 900})
    requested: list[str] = []
    opened.on("request", lambda request: requested.append(request.url))
    yield opened
    opened.close()
    elsewhere = [url for url in requested if not url.startswith(console_url)]
    assert elsewhere == [], "the console fetches nothing from outside its own server"


def test_the_graph_draws_every_actor_and_a_flow_can_be_picked(
    page: Page, console_url: str, running_mesh: RunningMesh
) -> None:
    page.goto(console_url)
    for actor in running_mesh.stack.mesh.config.actors:
        expect(page.locator(f'#graph .node[data-actor="{actor}"]')).to_have_count(1)
    expect(page.locator('#graph .node[data-actor="x-sump"]')).to_have_count(1)
    page.get_by_role("button", name=re.compile(r"^pipeline:")).click()
    expect(page.locator("#graph .edge.on")).to_have_count(3)  # prep → infer → post → x-sink
    expect(page.locator('#graph .node.on[data-actor="infer"]')).to_have_count(1)


def test_a_task_started_from_the_page_travels_and_shows_its_result(page: Page, console_url: str) -> None:
    page.goto(console_url)
    page.get_by_label("Flow", exact=True).select_option("pipeline")
    page.get_by_label("Payload (JSON)").fill('{"n": 4}')
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/tasks/[0-9a-f-]{36}$"))
    status = page.locator("#task-state .status").first
    expect(status).to_have_text("succeeded", timeout=60_000)  # the page follows the task live (SSE)
    expect(page.locator("#task-state pre.json")).to_contain_text('"label": "even"')
    hops = page.locator("table.hops tbody th")
    expect(hops).to_have_text(["prep", "infer", "post"])
    expect(page.locator('#graph .node.route-visited[data-actor="post"]')).to_have_count(1)
    started = page.locator("#task-state time[data-local]").first  # in the reader's zone, UTC on hover
    expect(started).not_to_have_text(re.compile(r"^\d{4}-\d\d-\d\dT"))
    expect(started).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\dT.* UTC$"))


def test_a_running_task_is_canceled_from_its_page(page: Page, console_url: str, running_mesh: RunningMesh) -> None:
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    created = gateway.create_task({"flow": "sleepy", "payload": {"sleep": 8}})
    page.goto(f"{console_url}/tasks/{created['id']}")
    page.get_by_role("button", name="Cancel task").click()
    expect(page.locator("#task-state .status").first).to_have_text("canceled", timeout=30_000)
    assert (gateway.task(created["id"]) or {})["status"] == "canceled"


EVIL_PAGE = """<form id="f" method="post" action="{action}"><input name="csrf" value="guessed"></form>
<script>document.getElementById("f").submit()</script>"""


def test_a_page_of_another_site_cannot_cancel_a_task_through_the_console(
    browser: Browser, served: ConsoleServer, running_mesh: RunningMesh
) -> None:
    """The operator's browser holds the console's cookie; a page of http://evil.example (served by the
    browser's router: nothing leaves the machine) posts a cancel form to the console. Refused (the
    SameSite=Strict cookie is not sent with it, its Origin is foreign, its CSRF field made up), and the
    task runs on."""
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    created = gateway.create_task({"flow": "sleepy", "payload": {"sleep": 3}})
    page = _signed_in(browser, served)
    try:
        evil = EVIL_PAGE.format(action=f"{served.url}/tasks/{created['id']}/cancel")
        page.route("http://evil.example/", lambda route: route.fulfill(body=evil, content_type="text/html"))
        with page.expect_navigation(url=f"{served.url}/tasks/{created['id']}/cancel"):
            page.goto("http://evil.example/")
        expect(page.locator("body")).to_contain_text(re.compile(r"session token|must come from one of its own pages"))
    finally:
        page.close()
    ended = gateway.wait(dict(created["task"]), time.monotonic() + 30)
    assert ended["status"] == "succeeded", "the task was not canceled"


def test_the_console_refuses_a_foreign_host_and_a_request_without_its_token(served: ConsoleServer) -> None:
    """DNS rebinding (a page of evil.example whose name now points at 127.0.0.1) reaches the console
    with `Host: evil.example`; a local process that does not know the token gets nothing either."""
    with httpx2.Client(trust_env=False, timeout=20) as client:
        assert client.get(f"{served.url}/tasks").status_code == 403
        assert client.get(f"{served.url}/tasks?token=guessed").status_code == 403
        rebound = client.get(f"{served.url}/tasks?token={served.token}", headers={"Host": "evil.example"})
        assert rebound.status_code == 400
        assert "Mesh" not in rebound.text
        opened = client.get(served.opening_url)
        assert opened.status_code == 200
        assert client.get(f"{served.url}/tasks").status_code == 200, "the cookie the token set suffices"
        forged = client.post(f"{served.url}/tasks", data={"flow": "pipeline", "payload": "{}"})
        assert forged.status_code == 403, "no Origin and no CSRF field: no task started"


def test_an_x_sump_entry_is_shown_and_inspected(page: Page, console_url: str, running_mesh: RunningMesh) -> None:
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    task_id = gateway.run_task({"flow": "failing", "payload": {"n": 1}}, 30)["id"]
    deadline = time.monotonic() + 30
    while not any(entry["id"] == task_id for entry in gateway.sump(actor="boom")) and time.monotonic() < deadline:
        time.sleep(0.5)
    page.goto(f"{console_url}/sump?actor=boom")
    expect(page.locator("table.groups tbody")).to_contain_text("boom")
    page.get_by_role("link", name=task_id[:12]).click()
    expect(page.locator("h1")).to_contain_text(task_id)
    expect(page.locator("dd.error-message")).to_contain_text("boom: this input cannot be handled")
    page.get_by_role("button", name="Redrive").click()  # where it failed, with the payload it had
    expect(page.get_by_role("status")).to_contain_text("Redriven to boom")
    redriven = [entry.get("redriven_to") for entry in gateway.sump(actor="boom") if entry["id"] == task_id]
    assert "boom" in redriven, "the gateway has it redriven (it fails again there: boom is not fixed)"


def test_a_paused_task_is_resumed_from_its_page(page: Page, console_url: str, running_mesh: RunningMesh) -> None:
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    task_id = gateway.create_task({"flow": "review", "payload": {"n": 2}})["id"]
    deadline = time.monotonic() + 30
    while (gateway.task(task_id) or {}).get("status") != "paused" and time.monotonic() < deadline:
        time.sleep(0.3)
    page.goto(f"{console_url}/tasks/{task_id}")
    expect(page.get_by_role("heading", name="Waiting for you")).to_be_visible()
    expect(page.locator("#task-state .status").first).to_have_text("paused")
    expect(page.locator("table.hops tbody th")).to_have_text(["prep", "waiting for a person"])
    expect(page.locator('#graph .node.route-paused[data-actor="x-pause"]')).to_have_count(1)
    more_input = page.get_by_label("More input (JSON, merged into the payload)")
    more_input.fill("approve it")  # not JSON: refused before anything is sent, and kept to be mended
    page.get_by_role("button", name="Resume").click()
    expect(page.get_by_role("alert")).to_contain_text("Not resumed: the input is not JSON")
    page.evaluate(
        "() => { const state = document.getElementById('task-state'); replaceKeepingInput(state, state.innerHTML"
        ".replace(/>approve it</, '><').replace(' data-typed', '')); }"
    )  # a status event's fresh render knows nothing of what was typed
    expect(more_input).to_have_value("approve it")
    assert (gateway.task(task_id) or {}).get("status") == "paused"
    more_input.fill('{"approved": true}')
    # a status event re-renders the state while the user types (the first comes as the page connects)
    page.evaluate(
        "() => { const state = document.getElementById('task-state'); replaceKeepingInput(state, state.innerHTML); }"
    )
    expect(more_input).to_have_value('{"approved": true}')
    expect(more_input).to_be_focused()
    # ...and the caret stays where the user left it, not at the end (nor a selection lost mid-edit)
    page.evaluate("() => document.getElementById('input').setSelectionRange(1, 11)")
    page.evaluate(
        "() => { const state = document.getElementById('task-state'); replaceKeepingInput(state, state.innerHTML); }"
    )
    caret = (
        "() => { const field = document.getElementById('input'); return [field.selectionStart, field.selectionEnd]; }"
    )
    assert page.evaluate(caret) == [1, 11]
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#task-state .status").first).to_have_text("succeeded", timeout=30_000)
    expect(page.locator("#task-state pre.json")).to_contain_text('"approved": true')
    expect(page.locator("table.hops tbody th")).to_have_text(["prep", "waiting for a person", "post"])


def test_the_console_works_by_keyboard_and_in_a_narrow_window(page: Page, console_url: str) -> None:
    page.set_viewport_size({"width": 360, "height": 800})
    page.goto(console_url)
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, "the page fits; only the graph scrolls, inside its frame"
    page.get_by_role("link", name="Tasks").focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/tasks$"))


def _luminance(css_colour: str) -> float:
    """WCAG's relative luminance of a computed colour, `rgb(r, g, b)` or `rgba(r, g, b, a)`."""
    red, green, blue = (int(part) / 255 for part in re.findall(r"\d+", css_colour)[:3])

    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def _contrast(one: str, other: str) -> float:
    light, dark = sorted((_luminance(one), _luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


# each readable element's colour and the colour behind it (a link of the graph wraps shapes, whose text is
# checked as the node's name): the nearest background that is not
# transparent, or for a node's name on the graph, its box's fill
COLOURS = """() => {
  const behind = (element) => {
    if (element instanceof SVGElement) return getComputedStyle(element.parentNode.querySelector('rect')).fill;
    for (let at = element; at; at = at.parentElement) {
      const colour = getComputedStyle(at).backgroundColor;
      if (!/rgba\\(.*, 0\\)$|transparent/.test(colour)) return colour;
    }
    return 'rgb(255, 255, 255)';
  };
  return [...document.querySelectorAll('body, p.hint, a:not(svg a), footer, .where, #graph .node text.name')]
    .filter((element) => element.getClientRects().length)
    .map((element) => [element.tagName + ' ' + (element.getAttribute('class') || ''),
                       getComputedStyle(element)[element instanceof SVGElement ? 'fill' : 'color'],
                       behind(element)]);
}"""


@pytest.mark.parametrize("width", [1400, 390])
def test_dark_mode_follows_the_system(browser: Browser, served: ConsoleServer, console_url: str, width: int) -> None:
    page = _signed_in(browser, served, viewport={"width": width, "height": 900}, color_scheme="dark")
    try:
        page.goto(console_url)
        [(_, text, background), *others] = page.evaluate(COLOURS)
        assert _luminance(background) < 0.02, f"a dark page, not {background}"
        assert _luminance(text) > 0.6, f"light text, not {text}"
        assert len(others) > 5, "the page has hints, links and the graph to read"
        for what, colour, behind in others:
            assert _contrast(colour, behind) >= 4.5, f"{what}: {colour} on {behind} is below WCAG AA"
        node = page.evaluate("() => getComputedStyle(document.querySelector('#graph .node rect')).fill")
        assert _luminance(node) < 0.02, f"the graph's nodes are dark too, not {node}"
    finally:
        page.close()


# a colour variable as the page resolves it, to compare with what an element was painted in
RESOLVED = """(name) => {
  const probe = document.createElement('span');
  probe.style.color = `var(${name})`;
  document.body.append(probe);
  const colour = getComputedStyle(probe).color;
  probe.remove();
  return colour;
}"""
FRAME_SCROLLS = "(table) => table.parentElement.scrollWidth > table.parentElement.clientWidth"
PAGE_OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_at_a_phones_width_wide_tables_scroll_in_their_frame_and_a_join_is_not_in_the_pause_colour(
    browser: Browser, served: ConsoleServer, console_url: str, scheme: Literal["light", "dark"]
) -> None:
    """At 390 px: the mesh's actor table keeps its last columns, reached by scrolling inside its frame;
    x-sump's page fits; each task filter's label is on the line of its control. On the graph, the join
    (gather) is framed in its own colour, not the pause's, and x-pause is drawn."""
    page = _signed_in(browser, served, viewport={"width": 390, "height": 844}, color_scheme=scheme)
    try:
        page.goto(console_url)
        join = page.evaluate("() => getComputedStyle(document.querySelector('#graph .node.join rect')).stroke")
        assert join == page.evaluate(RESOLVED, "--join")
        assert join != page.evaluate(RESOLVED, "--pause"), "a join is no person's wait"
        expect(page.locator('#graph .node.kind-crew[data-actor="x-pause"]')).to_have_count(1)
        assert page.evaluate(PAGE_OVERFLOW) <= 1, "the mesh page fits"
        actors = page.locator("table.actors")
        assert actors.evaluate(FRAME_SCROLLS), "the actor table scrolls inside its frame"
        failed = page.locator('table.actors tr[data-actor="boom"] td[data-stat="failed"]')
        failed.scroll_into_view_if_needed()
        expect(failed).to_be_in_viewport()
        expect(actors.get_by_role("columnheader", name="per minute")).to_be_attached()
        page.goto(f"{console_url}/sump")
        expect(page.locator("table.entries")).to_be_attached()
        assert page.evaluate(PAGE_OVERFLOW) <= 1, "x-sump's page fits; its tables scroll inside their frame"
        page.goto(f"{console_url}/tasks")
        for field in page.locator("form.filters .field").all():
            label, control = field.locator("label").bounding_box(), field.locator("select, input").bounding_box()
            assert label is not None
            assert control is not None
            middle = label["y"] + label["height"] / 2
            assert control["y"] <= middle <= control["y"] + control["height"], "a label on its control's line"
    finally:
        page.close()


@pytest.mark.parametrize("width", [1400, 390])
def test_tasks_are_paged_through_with_filters_that_the_link_keeps(
    page: Page, console_url: str, running_mesh: RunningMesh, width: int
) -> None:
    """Three tasks started now, two a page: the filters picked in the form, "Older →" and "← Newest",
    and a reload of an older page, in a wide and a phone-wide window."""
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    started = [gateway.run_task({"flow": "pipeline", "payload": {"n": n}}, 30)["id"] for n in range(3)]
    since = (gateway.task(started[0]) or {})["created_at"]  # this test's tasks only, to the millisecond
    newest_first = [task_id[:8] for task_id in reversed(started)]
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{console_url}/tasks?since={since}&limit=2")
    page.get_by_label("Flow", exact=True).select_option("pipeline")
    page.get_by_label("Reached").select_option("infer")
    page.get_by_role("button", name="Show").click()
    rows = page.locator("#task-rows th code")
    expect(rows).to_have_text(newest_first[:2])
    expect(page.locator("table.tasks caption")).to_contain_text("Tasks of pipeline that reached infer")
    page.get_by_role("link", name="Older →").click()
    expect(rows).to_have_text(newest_first[2:])
    expect(page).to_have_url(re.compile(r"flow=pipeline.*actor=infer.*cursor="))
    page.reload()
    expect(rows).to_have_text(newest_first[2:])
    expect(page.locator("table.tasks caption")).to_contain_text("an older page, not live")
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, "the list fits the window; the table scrolls inside its frame if it must"
    expect(rows.first).to_be_visible()
    page.get_by_role("link", name="← Newest").click()
    expect(rows).to_have_text(newest_first[:2])
    expect(page.get_by_label("Reached")).to_have_value("infer")


def test_a_failed_task_is_run_again_from_its_page_with_an_edited_input(
    page: Page, console_url: str, running_mesh: RunningMesh, worker_log: Path
) -> None:
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    failed = gateway.run_task({"flow": "failing", "payload": {"n": 1}}, 30)
    assert failed["status"] == "failed"
    deadline = time.monotonic() + 10
    while failed["id"] not in worker_log.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    page.goto(f"{console_url}/tasks/{failed['id']}")
    expect(page.locator("pre.task-input")).to_contain_text('"n": 1')
    logs = page.locator("table.task-logs")
    expect(logs).to_contain_text("boom refuses ['n', 'prepped']")  # what its handler logged, found by the task's id
    expect(logs).to_contain_text("WARNING")
    expect(logs).not_to_contain_text("GET /api/v1/mesh")  # an access log line, not a record of it
    page.set_viewport_size({"width": 390, "height": 800})
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, "the input, its log lines and the form fit a phone's width"
    page.set_viewport_size({"width": 1400, "height": 900})
    edited = page.get_by_label("Run it again with this input instead (JSON)")
    expect(edited).to_have_value(re.compile(r'"n": 1'))
    edited.fill('{"n": 1, "fixed_when": ')  # not JSON: refused, nothing starts, kept to be mended
    page.get_by_role("button", name="Run again with this input").click()
    expect(page.get_by_role("alert")).to_contain_text("Not run again: the input is not JSON")
    expect(edited).to_have_value('{"n": 1, "fixed_when": ')
    edited.fill(f'{{"n": 1, "fixed_when": "{__file__}"}}')  # a file that exists: `boom` lets it through
    page.get_by_role("button", name="Run again with this input").click()
    expect(page).not_to_have_url(re.compile(failed["id"]))
    expect(page.locator("#task-state .status").first).to_have_text("succeeded", timeout=60_000)
    expect(page.locator("pre.task-input")).to_contain_text('"fixed_when"')
    expect(page.get_by_role("link", name=failed["id"][:8])).to_be_visible()  # the task it runs again


def test_an_actors_history_is_charted_at_every_width(page: Page, console_url: str, running_mesh: RunningMesh) -> None:
    """An actor's page after tasks ran: reached from its node on the graph, its four charts drawn from
    the work just done, the window kept through a reload, readable at 1400 and at 390 pixels wide."""
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    for n in range(3):
        assert gateway.run_task({"flow": "pipeline", "payload": {"n": n}}, 60)["status"] == "succeeded"
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(console_url)
    page.locator('#graph a:has(.node[data-actor="infer"])').click()
    expect(page).to_have_url(re.compile(r"/actors/infer$"))
    for key in ("throughput", "duration", "errors", "age"):
        expect(page.locator(f"figure.chart-{key} svg")).to_be_visible()
    throughput = page.locator("figure.chart-throughput")
    expect(throughput.locator("rect.bar")).not_to_have_count(0)
    expect(throughput.locator(".chart-summary")).to_contain_text(re.compile(r"\b([3-9]|[1-9]\d+) processed"))
    expect(page.locator("figure.chart-duration path.line-p50")).to_have_attribute("d", re.compile(r"^M\d+ "))
    widths = page.eval_on_selector_all("figure.chart svg", "svgs => svgs.map(svg => svg.getBoundingClientRect().width)")
    assert all(width > 500 for width in widths), f"two charts a row at 1400 px: {widths}"
    hover = page.locator("figure.chart-throughput rect.hit title").last
    expect(hover).not_to_have_text(re.compile("UTC"))  # the bucket's start in the reader's zone
    expect(hover).to_have_text(re.compile(r"^\S.* · \d+ processed$"))

    page.get_by_role("link", name="last day").click()
    expect(page).to_have_url(re.compile(r"/actors/infer\?span=day$"))
    page.reload()
    expect(page.get_by_role("heading", name="Over the last day")).to_be_visible()
    expect(throughput.locator(".chart-times")).to_contain_text("24 h ago")

    page.set_viewport_size({"width": 390, "height": 844})
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, "the page fits at 390 px"
    widths = page.eval_on_selector_all("figure.chart svg", "svgs => svgs.map(svg => svg.getBoundingClientRect().width)")
    assert all(300 < width <= 390 for width in widths), f"one chart a row, as wide as the screen: {widths}"
    label = page.locator("figure.chart-throughput .chart-times span").first
    assert float(label.evaluate("node => getComputedStyle(node).fontSize").removesuffix("px")) >= 11


@pytest.fixture(scope="module")
def polished(running_mesh: RunningMesh) -> dict[str, Any]:
    """A task of the program flow `polishing` (tests/integration/mesh/programs.py) that went round its
    loop twice: prep, then polish and infer twice, then post."""
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    task = gateway.run_task({"flow": "polishing", "payload": {"n": 3}}, 30)
    assert task["status"] == "succeeded", task
    return task


TAKEN = """() => [...document.querySelectorAll('#graph .edge.route-taken')]
  .map((edge) => `${edge.dataset.source} ${edge.dataset.target} ${edge.dataset.taken}`).sort()"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1400, 390])
def test_a_program_flows_task_page_draws_its_program_with_the_path_it_took(
    browser: Browser, served: ConsoleServer, polished: dict[str, Any], width: int, scheme: Literal["light", "dark"]
) -> None:
    """The program's graph alone, the steps the task took in the colour of success, the loop's repeated
    step counted ("\u00d72"), the steps it did not take not; readable in both schemes, fitting at 390 px."""
    page = _signed_in(browser, served, viewport={"width": width, "height": 900}, color_scheme=scheme)
    try:
        page.goto(f"{served.url}/tasks/{polished['id']}")
        expect(page.locator("#graph[data-program]")).to_have_count(1)
        expect(page.locator('#graph .node[data-actor="fan"]')).to_have_count(0)  # the program's actors only
        expect(page.locator('#graph .node.route-visited[data-actor="polish"]')).to_have_count(1)
        assert page.evaluate(TAKEN) == [
            "infer polish 1",
            "infer post 1",
            "polish infer 2",
            "post x-sink 1",
            "prep polish 1",
        ], "every step taken, the loop's counted, and no other (prep → post was not taken)"
        twice = page.locator('#graph .mark[data-source="polish"][data-target="infer"] text.times')
        expect(twice).to_have_text("\u00d72")
        taken = page.evaluate("() => getComputedStyle(document.querySelector('#graph .edge.route-taken')).stroke")
        assert taken == page.evaluate(RESOLVED, "--ok")
        behind = page.evaluate("() => getComputedStyle(document.querySelector('figure.graph')).backgroundColor")
        assert _contrast(twice.evaluate("(text) => getComputedStyle(text).fill"), behind) >= 4.5
        loop = page.locator('#graph .mark.kind-loop[data-source="infer"][data-target="polish"]')
        expect(loop).to_have_count(1)
        mark = loop.locator("text").first.evaluate("(text) => getComputedStyle(text).fill")
        circle = loop.locator("circle").evaluate("(circle) => getComputedStyle(circle).fill")
        assert _contrast(mark, circle) >= 4.5, f"the loop's mark: {mark} on {circle}"
        expect(page.get_by_text("Flow polishing is a program")).to_be_visible()
        assert page.evaluate(PAGE_OVERFLOW) <= 1, "the page fits; the graph scrolls in its frame"
    finally:
        page.close()


@pytest.fixture(scope="module")
def failed_tasks(running_mesh: RunningMesh) -> dict[str, dict[str, Any]]:
    """A fan-out one of whose three branches failed at `pick` (its own envelope ended well there too),
    and a task whose join gave up (two of three branches failed at `pick`, one more than it tolerates)."""
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    fan_out = gateway.run_task({"route": ["fan", "pick"], "payload": {"parts": 3, "fail": [1]}}, 60)
    joined = gateway.run_task({"flow": "joined", "payload": {"parts": 3, "fail": [0, 2]}}, 60)
    assert (fan_out["status"], fan_out.get("reason")) == ("failed", "BranchFailed"), fan_out
    assert (joined["status"], joined.get("reason")) == ("failed", "JoinFailed"), joined
    return {"fan-out": fan_out, "join": joined}


FIRST_SCREEN = """(element) => {
  const box = element.getBoundingClientRect();
  return {top: box.top, bottom: box.bottom, height: window.innerHeight, scrolled: window.scrollY};
}"""


@pytest.mark.parametrize("width", [1400, 390])
@pytest.mark.parametrize("which", ["fan-out", "join"])
def test_a_failed_tasks_page_says_why_in_its_first_screen(
    browser: Browser, served: ConsoleServer, failed_tasks: dict[str, dict[str, Any]], which: str, width: int
) -> None:
    """Where it failed and the handler's exception type and message, above the graph, seen without
    scrolling at 1400x900 and at a phone's 390 px."""
    page = _signed_in(browser, served, viewport={"width": width, "height": 900})
    try:
        page.goto(f"{served.url}/tasks/{failed_tasks[which]['id']}")
        lead = page.locator("#task-why .why-lead")
        at = "pick" if which == "fan-out" else "gather"
        expect(lead).to_have_text(re.compile(rf"^failed at {at}: ValueError: part [012] was picked to fail$"))
        expect(page.locator(f'#graph .node.route-failed[data-actor="{at}"]')).to_have_count(1)  # a join's too
        seen = lead.evaluate(FIRST_SCREEN)
        assert seen["scrolled"] == 0
        assert seen["top"] >= 0, f"not above the screen at {width} px: {seen}"
        assert seen["bottom"] <= seen["height"], f"in the first screen at {width} px: {seen}"
        assert lead.evaluate("(lead) => lead.getBoundingClientRect().bottom") < page.locator("#graph").evaluate(
            "(graph) => graph.getBoundingClientRect().top"
        ), "above the graph"
    finally:
        page.close()


def test_the_task_list_says_where_a_task_failed_and_why_at_a_phones_width(
    browser: Browser, served: ConsoleServer, failed_tasks: dict[str, dict[str, Any]]
) -> None:
    """The fan-out's own envelope ended well at `pick` too; the join's task failed at `gather`."""
    page = _signed_in(browser, served, viewport={"width": 390, "height": 900})
    try:
        page.goto(f"{served.url}/tasks?status=failed")
        for which, at, part in (("fan-out", "pick", "1"), ("join", "gather", "[02]")):
            row = page.locator("#task-rows tr").filter(has=page.get_by_role("link", name=failed_tasks[which]["id"][:8]))
            expect(row.locator("td").nth(2)).to_have_text(at)
            reason = row.locator("td.reason")
            expect(reason).to_have_text(re.compile(rf"^ValueError: part {part} was picked to fail$"))
            expect(reason).to_be_visible()
    finally:
        page.close()


def test_a_failed_tasks_graph_draws_what_it_reached_and_its_actors_failed_chart_leads_to_it(
    browser: Browser, served: ConsoleServer, failed_tasks: dict[str, dict[str, Any]]
) -> None:
    """The fan-out (started with the route fan → pick) draws fan, pick and the crew's two, not the
    mesh's other actors; pick's "failed" chart links to the failed tasks that reached pick, it among
    them, and to x-sump's entries from pick."""
    page = _signed_in(browser, served, viewport={"width": 1400, "height": 900})
    try:
        fan_out = failed_tasks["fan-out"]["id"]
        page.goto(f"{served.url}/tasks/{fan_out}")
        drawn = page.eval_on_selector_all("#graph .node", "nodes => nodes.map(node => node.dataset.actor).sort()")
        assert drawn == ["fan", "pick", "x-sink", "x-sump"], drawn
        page.goto(f"{served.url}/actors/pick")
        page.locator("figure.chart-errors").get_by_role("link", name="its failed tasks").click()
        expect(page).to_have_url(re.compile(r"/tasks\?status=failed&actor=pick$"))
        expect(page.get_by_role("link", name=fan_out[:8])).to_be_visible()
        page.go_back()
        page.locator("figure.chart-errors").get_by_role("link", name="what x-sump kept from it").click()
        expect(page).to_have_url(re.compile(r"/sump\?actor=pick$"))
    finally:
        page.close()


def test_the_start_forms_payload_is_never_clipped(page: Page, console_url: str) -> None:
    """Every line of what is typed shows in the box, its last one too, without scrolling inside it."""
    page.goto(console_url)
    payload = page.get_by_label("Payload (JSON)")
    clipped = "(box) => box.scrollHeight - box.clientHeight"
    assert payload.evaluate(clipped) <= 1, "the example as the page renders it"
    payload.fill("{\n" + ",\n".join(f'  "field_{n}": {n}' for n in range(9)) + "\n}")
    assert payload.evaluate(clipped) <= 1, "eleven lines typed"
