"""`make screenshots`: the console's main pages as PNG files, for the docs.

Runs the reviews example on the local stack, serves its console, starts a few tasks (a summary whose
reviews all score, a triage whose empty review cannot be scored, so that x-sump has something to
show), and photographs the mesh, the task list, a task that succeeded and one its branch failed, x-sump
and an actor's page, the mesh in the dark scheme and the failed task at a phone's width; then runs the
answers example and photographs its flow program's steps on the mesh and a task on its program's graph;
in headless Chromium (Debian's, at `ASYA_CHROMIUM` or /usr/bin/chromium) driven by Playwright.

    python -m asya_local.console.screenshots docs/console
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from playwright.sync_api import sync_playwright

from asya_cdk.loading import load_mesh
from asya_local.console.activity import ActivityCounter
from asya_local.console.local import LocalMesh, local_console
from asya_local.console.server import serve
from asya_local.endpoint.process import free_port
from asya_local.gateway_client import GatewayClient
from asya_local.stack import LocalStack

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MESH = EXAMPLES / "reviews" / "mesh.yaml"
ANSWERS = EXAMPLES / "answers" / "mesh.yaml"
CHROMIUM = os.environ.get("ASYA_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
WIDTH = 1280
NARROW = 390  # a phone's width


Shot = tuple[str, str, int, Literal["light", "dark"]]  # (file, page, width, scheme)


def reviews_shots(gateway: GatewayClient) -> list[Shot]:
    """The reviews example's tasks, and the pages that show them."""
    summary = gateway.run_task(
        {
            "flow": "summarise-reviews",
            "payload": {"product": "kettle-9", "reviews": ["Great, love it", "ok", "Broken"]},
        },
        30,
    )
    failed = gateway.run_task(
        {"flow": "triage-reviews", "payload": {"product": "lamp-2", "reviews": ["Bad light", ""]}}, 30
    )
    for number in range(6):  # some work for the figures, some still running for the list
        gateway.create_task({"flow": "triage-reviews", "payload": {"product": f"mug-{number}", "reviews": ["ok"]}})
    time.sleep(2)
    return [
        ("mesh", "/", WIDTH, "light"),
        ("tasks", "/tasks", WIDTH, "light"),
        ("task", f"/tasks/{summary['id']}", WIDTH, "light"),
        ("task-failed", f"/tasks/{failed['id']}", WIDTH, "light"),
        ("sump", "/sump", WIDTH, "light"),
        ("actor", "/actors/score", WIDTH, "light"),
        ("mesh-dark", "/", WIDTH, "dark"),
        ("task-failed-narrow", f"/tasks/{failed['id']}", NARROW, "dark"),
    ]


def program_shots(gateway: GatewayClient) -> list[Shot]:
    """The answers example's flow program: its steps on the mesh, and a task whose draft fell back to
    the long-context model and whose loop went round three times, on its program's graph."""
    inputs = json.loads((ANSWERS.parent / "inputs.json").read_text())
    long_message = next(payload for payload in inputs if payload["customer"] == "Joe")
    task = gateway.run_task({"flow": "answer", "payload": long_message}, 60)
    return [("program-mesh", "/", WIDTH, "light"), ("program-task", f"/tasks/{task['id']}", WIDTH, "light")]


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for mesh_file, shots in ((MESH, reviews_shots), (ANSWERS, program_shots)):
        photograph(folder, mesh_file, shots)


def photograph(folder: Path, mesh_file: Path, shots: Callable[[GatewayClient], list[Shot]]) -> None:
    """The pages `shots` names, after it started their tasks, on a stack of `mesh_file`."""
    mesh = load_mesh(mesh_file)
    activity = ActivityCounter(mesh.config.namespace)

    def on_line(_source: str, line: str) -> None:
        activity.take(line)

    with LocalStack(mesh, port=free_port(), on_line=on_line) as stack:
        assert stack.gateway_url is not None
        served = serve(local_console(LocalMesh.of_stack(stack), activity))
        pages = shots(stack.gateway_client())
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            for name, path, width, scheme in pages:
                page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=scheme)
                page.goto(served.opening_url)  # a new page is a new browser context: its cookie first
                page.goto(served.url + path)
                page.wait_for_timeout(1500)  # the first live update
                page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
                page.close()
                print(folder / f"{name}.png")
            browser.close()
        served.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/console"))
