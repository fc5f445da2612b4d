"""A failed task in the console as someone who did not write it reads it: why first (where, the
handler's exception type and message, the traceback), above the graph; each failing branch listed once;
the task lists saying where each task failed and why."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from asya.names import SUMP
from asya_cdk.loading import load_mesh
from asya_local.console.app import Console
from asya_local.console.stats import ActorStats
from asya_local.console.topology import Topology
from asya_local.gateway_client import GatewayError
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats

TRACE = 'Traceback (most recent call last):\n  File "/var/task/actors.py", line 9, in score\nValueError: no text'
BRANCH: dict[str, Any] = {
    "id": "ecf5c561-0000-0000-0000-000000000002",
    "status": "failed",
    "actor": "score",
    "reason": "RuntimeError",
    "error": {"type": "ValueError", "message": "review 2 of lamp-2 has no text to score", "traceback": TRACE},
}


def failed_fan_out() -> dict[str, Any]:
    """The review's case: triage-reviews' root, its own envelope ended well at triage, one of its two
    branches failed at score (the gateway's view of it, `failed_branches` named)."""
    return {
        "id": "root0000-0000-0000-0000-000000000001",
        "flow": "triage-reviews",
        "status": "failed",
        "terminal": True,
        "reason": "BranchFailed",
        "actor": "triage",
        "error": {"message": "1 of 2 branches failed", "type": None},
        "route": {"prev": ["split", "score"], "curr": "triage", "next": []},
        "branches": {"total": 2, "open": 0, "succeeded": 1, "failed": 1, "canceled": 0},
        "branch_ids": [BRANCH["id"]],
        "failed_branches": [BRANCH],
        "created_at": "2026-11-26T10:00:00.000Z",
    }


class ListingGateway(FakeGateway):
    """Lists tasks as the gateway does, without `failed_branches` (a read of each root's branches), and
    counts the reads of one task's view."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []
        self.refused: set[str] = set()  # tasks whose view the gateway does not answer

    def task(self, task_id: str) -> dict[str, Any] | None:
        self.read.append(task_id)
        if task_id in self.refused:
            raise GatewayError("503: the gateway is busy", 503)
        return super().task(task_id)

    def follow(self, task_id: str) -> Iterator[tuple[str, Any]]:
        yield "status", self.known[task_id]

    def task_page(self, **where: Any) -> dict[str, Any]:
        page = super().task_page(**where)
        listed = [{name: value for name, value in task.items() if name != "failed_branches"} for task in page["tasks"]]
        return {**page, "tasks": listed}


@pytest.fixture
def gateway() -> ListingGateway:
    stand_in = ListingGateway()
    root = failed_fan_out()
    stand_in.known[root["id"]] = root
    stand_in.known[BRANCH["id"]] = {**BRANCH, "terminal": True, "parent_id": root["id"]}
    return stand_in


@pytest.fixture
def client(gateway: ListingGateway) -> FlaskClient:
    console = Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), gateway, "here")  # type: ignore[arg-type]
    return console_client(console)


def _text(html: str) -> str:
    """The words of an HTML fragment, as a reader sees them."""
    return re.sub(r" ([,;:])", r"\1", " ".join(re.sub(r"<[^>]+>", " ", html).split()))


def test_a_failed_fan_outs_page_starts_with_the_failing_branchs_error_above_the_graph(client: FlaskClient) -> None:
    page = client.get(f"/tasks/{failed_fan_out()['id']}").get_data(as_text=True)
    error, graph = page.index('<h2 id="error-heading"'), page.index('id="route-heading"')
    assert error < graph, "why it failed comes before the graph"
    why = _text(page[error:graph])
    assert "failed at score: ValueError: review 2 of lamp-2 has no text to score" in why
    assert "From branch ecf5c561, failed at score; the task: 1 of 2 branches failed" in why
    assert why.index("no text to score") < why.index("Traceback") < why.index("ValueError: no text")


def test_a_page_open_as_its_task_fails_is_sent_why_above_its_graph(client: FlaskClient) -> None:
    """The live page's `why` event fills the place above the graph, once, as the task ends."""
    stream = client.get(f"/events/tasks/{failed_fan_out()['id']}")
    sent = b"".join(stream.response).decode()  # type: ignore[arg-type]  # ends with the task: bytes
    assert sent.count("event: why") == 1
    why = sent[sent.index("event: why") : sent.index("event: task")]
    assert "failed at score: ValueError: review 2 of lamp-2 has no text to score" in _text(why.replace("data: ", ""))
    assert sent.index("event: why") < sent.index("event: end")


def test_a_task_that_failed_at_a_hop_leads_with_its_own_error_and_the_actor(client: FlaskClient) -> None:
    page = client.get("/tasks/t3").get_data(as_text=True)
    why = _text(page[page.index('<h2 id="error-heading"') : page.index('<h2 id="route-heading"')])
    assert why.startswith("Error failed at score: ValueError: &lt;bad&gt; input Traceback")


def test_a_failing_branch_is_listed_once_on_its_roots_page(client: FlaskClient) -> None:
    page = client.get(f"/tasks/{failed_fan_out()['id']}").get_data(as_text=True)
    assert page.count(f'href="/tasks/{BRANCH["id"]}"') == 2, "the cause's link, and its line among the branches"
    assert "did not succeed</h3>" not in page
    assert "Other branches" not in page


def test_a_join_that_gave_up_leads_with_a_branchs_error_at_the_join_not_with_its_own_count(
    client: FlaskClient, gateway: ListingGateway
) -> None:
    """The root's own envelope is one of the join's branches (the join goes on under the task's id):
    the gateway names the task itself among the failed branches, at the actor its envelope failed at,
    with its handler's error. The lead is that error, at the join; the page says it is the task's own
    envelope, not a link to itself, and lists the other failed branch once, linked."""
    count = "2 of 3 branches failed (on_failure: tolerate 1): branch 1 of 3 (j1) ValueError: part 0; branch 3 ..."
    itself = {"id": "j1", "status": "failed", "actor": "pick", "error": {"type": "ValueError", "message": "part 0"}}
    other = {**BRANCH, "id": "j3", "actor": "pick", "branch": 3, "width": 3}
    gateway.known["j1"] = {
        "id": "j1",
        "status": "failed",
        "terminal": True,
        "reason": "JoinFailed",
        "actor": "gather",
        "error": {"message": count, "type": None},
        "route": {"prev": ["fan", "pick"], "curr": "gather", "next": []},
        "failed_branches": [{**itself, "branch": 1, "width": 3}, other],
    }
    page = client.get("/tasks/j1").get_data(as_text=True)
    shown = page[page.index('<h2 id="error-heading"') : page.index('<h2 id="route-heading"')]
    why = _text(shown)
    assert why.startswith("Error failed at gather: ValueError: part 0")
    assert f"From branch 1 of 3, the task's own envelope, failed at pick; the join at gather gave up: {count}" in why
    assert "Other branches that failed branch 3 of 3, j3 failed at pick: ValueError review 2 of lamp-2" in why
    assert 'href="/tasks/j1"' not in shown, "the task's own envelope is this page"
    assert 'href="/tasks/j3"' in shown


def _row(page: str, task_id: str) -> list[str]:
    """A list row's cells, as words."""
    row = page[page.index(f'href="/tasks/{task_id}"') :]
    return [_text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row[: row.index("</tr>")], re.S)]


def test_the_task_list_says_where_each_task_failed_and_why(client: FlaskClient, gateway: ListingGateway) -> None:
    """The review's row: at `triage` (where the root's own envelope ended well), no reason. Now where its
    branch failed and the handler's error, read once from the task's view and kept for the live list."""
    root = failed_fan_out()["id"]
    for _ in range(2):
        page = client.get("/tasks?status=failed").get_data(as_text=True)
        assert '<th scope="col">at</th><th scope="col">reason</th>' in page
        flow, status, at, reason = _row(page, root)[:4]
        assert (flow, status, at) == ("triage-reviews", "failed", "score")
        assert reason == "ValueError: review 2 of lamp-2 has no text to score"
        assert _row(page, "t3")[2:4] == ["score", "ValueError: &lt;bad&gt; input"], "a task that failed at a hop"
    assert gateway.read.count(root) == 1, "an ended task's failure is read once"
    assert "t3" not in gateway.read, "its own error says it: nothing more read"
    stream = client.get("/events/mesh?tasks=1&status=failed")
    chunks: Iterator[bytes] = iter(stream.response)  # type: ignore[arg-type]  # a streamed body: bytes
    live = b"".join(next(chunks) for _ in range(3)).decode()
    stream.close()
    assert "ValueError: review 2 of lamp-2 has no text to score" in live, "the live rows say it too"
    assert gateway.read.count(root) == 1


def _route(page: str) -> dict[str, str]:
    found = re.search(r"data-route='([^']*)'", page)
    assert found is not None
    return dict(json.loads(found.group(1)))


def test_a_join_that_gave_up_is_drawn_failed_and_a_fan_outs_own_route_that_ended_well_is_not(
    client: FlaskClient, gateway: ListingGateway
) -> None:
    """The review's join page drew `summarise` green: the task failed at it."""
    gateway.known["j2"] = {
        "id": "j2",
        "status": "failed",
        "terminal": True,
        "reason": "JoinFailed",
        "actor": "summarise",
        "error": {"message": "1 of 3 branches failed", "type": None},
        "route": {"prev": ["split", "score"], "curr": "summarise", "next": []},
        "failed_branches": [{**BRANCH, "branch": 2, "width": 3}],
    }
    assert _route(client.get("/tasks/j2").get_data(as_text=True)) == {
        "split": "visited",
        "score": "failed",
        "summarise": "failed",
    }
    fan_out = _route(client.get(f"/tasks/{failed_fan_out()['id']}").get_data(as_text=True))
    assert fan_out == {"split": "visited", "score": "failed", "triage": "visited"}


def test_canceled_branches_are_said_canceled(client: FlaskClient, gateway: ListingGateway) -> None:
    gateway.known["c1"] = {
        "id": "c1",
        "status": "canceled",
        "terminal": True,
        "reason": "Canceled",
        "actor": "score",
        "route": {"prev": ["split"], "curr": "score", "next": ["triage"]},
        "branches": {"total": 3, "open": 0, "succeeded": 1, "failed": 0, "canceled": 2},
    }
    page = client.get("/tasks/c1").get_data(as_text=True)
    assert "2 of 3 branches canceled" in page
    assert "did not succeed" not in page
    why = _text(page[page.index('<h2 id="error-heading"') : page.index('<h2 id="route-heading"')])
    assert why == "Why it ended canceled at score", "not canceled: Canceled"
    fan_out = client.get(f"/tasks/{failed_fan_out()['id']}").get_data(as_text=True)
    assert "1 of 2 branches failed (at score)" in _text(fan_out)


class SumpStats:
    def actor_stats(self) -> dict[str, ActorStats]:
        return {SUMP: ActorStats(visible=0, in_flight=0, age_seconds=0, per_minute=0.8, failed=4)}


def test_x_sumps_node_counts_arrivals_not_failures(gateway: ListingGateway) -> None:
    """x-sump's `failed` figure is what arrived there; said as its page says it, not in the failure colour."""
    console = Console(Topology.of_mesh(load_mesh(REVIEWS)), SumpStats(), gateway, "here")  # type: ignore[arg-type]
    page = console_client(console).get("/").get_data(as_text=True)
    node = page.split(f'data-actor="{SUMP}"', 1)[1].split("</g>", 1)[0]
    assert '<tspan data-stat="failed">4</tspan> arrivals' in node
    assert f'<tr data-actor="{SUMP}">' in page
    row = page.split(f'<tr data-actor="{SUMP}">', 1)[1].split("</tr>", 1)[0]
    assert '<td><span data-stat="failed">4</span> arrivals</td>' in row, "the table's row says it too"
    assert "failed-count" not in node
    assert "failed" not in _text(node)


def test_a_view_the_gateway_does_not_answer_leaves_the_row_as_listed_and_is_asked_again(
    client: FlaskClient, gateway: ListingGateway
) -> None:
    root = failed_fan_out()["id"]
    gateway.refused.add(root)
    page = client.get("/tasks?status=failed")
    assert page.status_code == 200, "the list, not an error page"
    assert _row(page.get_data(as_text=True), root)[2] == "triage", "where its own envelope ended, as listed"
    gateway.refused.clear()
    assert _row(client.get("/tasks?status=failed").get_data(as_text=True), root)[2] == "score"


MACHINE_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/root/.cache/asya-aws/sources/0f3c9a/asya/hop.py", line 80, in run\n'
    "    out = handler(payload)\n"
    '  File "/tmp/asya-cdk-jf9euhzj/asset.2335bb01/actors.py", line 9, in score\n'
    "    raise ValueError('no text')\n"
    "ValueError: no text"
)


def test_a_traceback_names_files_without_the_machines_folders_as_the_cli_does(
    client: FlaskClient, gateway: ListingGateway
) -> None:
    """The failed task's page, a failed branch listed on it and x-sump's entry show a traceback's files
    as `asya results` names them: the machine's folders (a CDK asset's, the sources' cache) left out."""
    other = {
        **BRANCH,
        "id": "ecf5c561-0000-0000-0000-000000000003",
        "error": {**BRANCH["error"], "traceback": MACHINE_TRACE},
    }
    root = failed_fan_out()
    first = {**BRANCH, "error": {**BRANCH["error"], "traceback": MACHINE_TRACE}}
    gateway.known[root["id"]] = {**root, "failed_branches": [first, other], "branch_ids": [BRANCH["id"]]}
    page = html.unescape(client.get(f"/tasks/{root['id']}").get_data(as_text=True))
    assert page.count('File "actors.py", line 9, in score') == 2, "the cause's traceback and the other branch's"
    assert 'File "hop.py", line 80, in run' in page
    assert "/tmp/asya-cdk" not in page
    assert "/root/.cache" not in page
    kept = {"id": "e1", "status": {"phase": "failed", "error": {"type": "ValueError", "traceback": MACHINE_TRACE}}}
    gateway.sump_entry = lambda envelope_id: {  # type: ignore[method-assign]
        "entry": {"id": envelope_id, "reason": "HandlerError", "actor": "score", "arrived_at": "2026-11-26T10:00:00Z"},
        "kept": kept,
    }
    entry = html.unescape(client.get("/sump/e1").get_data(as_text=True))
    shown = entry[: entry.index('id="kept-heading"')]
    assert 'File "actors.py", line 9, in score' in shown, "above the copy as kept, which stays whole"
    assert "/tmp/asya-cdk" not in shown
