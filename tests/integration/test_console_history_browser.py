"""An actor's page in a real browser, after tasks ran on the local stack: reached from its node on the
mesh's graph, its four charts drawn from the work just done, the window kept through a reload, and
readable at 1400 and at 390 pixels wide (the fixtures are the console's browser tests')."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from asya_local.gateway_client import GatewayClient
from tests.integration.test_console_browser import browser, console_url, page  # noqa: F401 - fixtures
from tests.support.stack import RunningMesh

pytestmark = pytest.mark.integration
CHARTS = ("throughput", "duration", "errors", "age")


def test_an_actors_history_is_charted_at_every_width(
    page: Page,  # noqa: F811 - the fixture
    console_url: str,  # noqa: F811 - the fixture
    running_mesh: RunningMesh,
) -> None:
    assert running_mesh.stack.gateway_url is not None
    gateway = GatewayClient(running_mesh.stack.gateway_url, running_mesh.stack.api_key)
    for n in range(3):
        assert gateway.run_task({"flow": "pipeline", "payload": {"n": n}}, 60)["status"] == "succeeded"
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(console_url)
    page.locator('#graph a:has(.node[data-actor="infer"])').click()
    expect(page).to_have_url(re.compile(r"/actors/infer$"))
    for key in CHARTS:
        expect(page.locator(f"figure.chart-{key} svg")).to_be_visible()
    throughput = page.locator("figure.chart-throughput")
    expect(throughput.locator("rect.bar")).not_to_have_count(0)
    expect(throughput.locator(".chart-summary")).to_contain_text(re.compile(r"[3-9]\d* processed"))
    expect(page.locator("figure.chart-duration path.line-p50")).to_have_attribute("d", re.compile(r"^M\d+ "))
    widths = page.eval_on_selector_all("figure.chart svg", "svgs => svgs.map(svg => svg.getBoundingClientRect().width)")
    assert all(width > 500 for width in widths), f"two charts a row at 1400 px: {widths}"

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
    if shots := os.environ.get("ASYA_SHOTS"):
        page.screenshot(path=f"{shots}/actor-390.png", full_page=True)
        page.set_viewport_size({"width": 1400, "height": 900})
        page.screenshot(path=f"{shots}/actor-1400.png", full_page=True)
    label = page.locator("figure.chart-throughput .chart-times span").first
    assert float(label.evaluate("node => getComputedStyle(node).fontSize").removesuffix("px")) >= 11
