"""A fan-out root that succeeded has no single result: its own envelope is one of its branches, so the
gateway's view, `asya status` (and `send --wait`, the same table), MCP and the console show the
branches' outcomes and its own envelope's output as that branch's, never as the task's result. A root
a join gathered into keeps the join's result as its own."""

from __future__ import annotations

import html
import json
from typing import Any

from rich.console import Console

from asya.task_store import TaskStore
from asya_cdk.loading import load_mesh
from asya_gateway.service import TaskService
from asya_gateway.views import task_view
from asya_local.console import app
from asya_local.console.topology import Topology
from asya_local.task_text import task_table
from asya_local.testing.tables import TASKS
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats
from tests.unit.test_gateway_wait import service, tool_call


def _succeeded_fan_out(store: TaskStore, root: str = "root") -> None:
    """A root whose own envelope and both branches succeeded, each with an output of its own."""
    store.create({"id": root})
    store.register_branches(root, ["b1", "b2"])
    store.finish(root, root, "succeeded", {"output": '{"review": 1}'}, fanned_out=True)
    store.finish("b1", root, "succeeded", {"output": '{"review": 2}'}, parent_id=root)
    store.finish("b2", root, "succeeded", {"output": '{"review": 3}'}, parent_id=root)


def test_the_view_sets_the_roots_own_output_apart_from_the_tasks_result(task_store: TaskStore) -> None:
    _succeeded_fan_out(task_store)
    record = task_store.get("root")
    assert record is not None
    assert record["output"] == '{"review": 1}', "the record keeps it (x-sink's readers, the benches)"
    view = task_view(record)
    assert view["status"] == "succeeded"
    assert "output" not in view
    assert "result" not in view
    assert view["own_envelope"] == {"output": {"review": 1}}
    assert view["branches"] == {"total": 3, "open": 0, "succeeded": 3, "failed": 0, "canceled": 0}
    assert view["branch_ids"] == ["b1", "b2"]


def test_a_root_a_join_gathered_into_keeps_the_joins_result(task_store: TaskStore) -> None:
    """A join's branches are not registered on the root, and the joined envelope goes on as the root."""
    task_store.create({"id": "root"})
    task_store.finish("root", "root", "succeeded", {"output": '{"reviews": 3}'})
    record = task_store.get("root")
    assert record is not None
    view = task_view(record)
    assert view["output"] == {"reviews": 3}
    assert "own_envelope" not in view


def _rows(task: dict[str, Any]) -> dict[str, str]:
    console = Console(width=300, record=True)
    console.print(task_table(task))
    lines = console.export_text().splitlines()[2:-1]
    return {line.split("│")[1].strip(): line.split("│")[2].strip() for line in lines}


def test_asya_status_says_there_is_no_single_result(task_store: TaskStore, gateway: TaskService) -> None:
    _succeeded_fan_out(task_store)
    rows = _rows(gateway.wait("root", 1)[1])  # `asya send --wait` prints the same table
    assert "output" not in rows
    assert rows["result"] == (
        "no single result: the task fanned out into 3 branches (3 succeeded, 0 failed, 0 canceled), "
        "each with its own result"
    )
    assert rows["own envelope"] == 'one of the branches, it ended with {"review": 1}'


def test_an_mcp_tool_call_answers_with_the_branches_not_one_of_them(task_store: TaskStore) -> None:
    tasks = service(task_store, mcp_wait=5)
    tasks.sleep = lambda _seconds: _fan_out_every_task(task_store)
    result = tool_call(tasks)
    assert result["isError"] is False
    content = result["content"]
    assert isinstance(content, list)
    assert "no single result: the task fanned out into 3 branches" in content[0]["text"]
    structured = result["structuredContent"]
    assert isinstance(structured, dict)
    assert "output" not in structured
    assert structured["own_envelope"] == {"output": {"review": 1}}
    assert structured["branch_ids"] == ["b1", "b2"]


def _fan_out_every_task(store: TaskStore) -> None:
    for item in store.client.scan(TableName=TASKS)["Items"]:
        if item["id"]["S"] not in ("b1", "b2") and "branch_ids" not in item:
            _succeeded_fan_out(store, item["id"]["S"])


def test_the_console_shows_the_branches_outcomes_and_the_own_output_as_a_branchs() -> None:
    gateway = FakeGateway()
    gateway.known["root"] = {
        "id": "root",
        "status": "succeeded",
        "terminal": True,
        "branches": {"total": 3, "open": 0, "succeeded": 3, "failed": 0, "canceled": 0},
        "branch_ids": ["b1", "b2"],
        "own_envelope": {"output": {"review": 1}},
    }
    for number, branch in ((2, "b1"), (3, "b2")):
        gateway.known[branch] = {"id": branch, "status": "succeeded", "terminal": True, "output": {"review": number}}
    console = app.Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), gateway, "here")  # type: ignore[arg-type]
    client = console_client(console)
    page = client.get("/tasks/root").get_data(as_text=True)
    result = page[page.index('id="result-heading"') :]
    assert "No single result: this task fanned out into 3 branches" in result
    assert "Its own envelope, one of the branches" in result
    assert "&#34;review&#34;: 1" in result
    branches = page[page.index('id="branches-heading"') : page.index('id="result-heading"')]
    assert 'href="/tasks/b1"' in branches
    assert "{&#34;review&#34;: 2}</code>" in branches, "each branch with its own result"


def _fan_out_page(branches: dict[str, dict[str, Any]]) -> str:
    """The console's page of a succeeded root, its own envelope at triage, with the branches given."""
    gateway = FakeGateway()
    gateway.known["root"] = {
        "id": "root",
        "status": "succeeded",
        "terminal": True,
        "route": {"prev": ["split", "score"], "curr": "triage", "next": []},
        "branches": {"total": len(branches) + 1, "open": 0, "succeeded": len(branches) + 1, "failed": 0, "canceled": 0},
        "branch_ids": list(branches),
        "own_envelope": {"output": {"review": 1}},
    }
    gateway.known.update(branches)
    console = app.Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), gateway, "here")  # type: ignore[arg-type]
    return console_client(console).get("/tasks/root").get_data(as_text=True)


def test_the_graph_fills_the_actors_a_fan_outs_branches_visited() -> None:
    """An escalated branch went where the root's own envelope did not: escalate is filled as visited."""
    escalated = {
        "id": "b1",
        "status": "succeeded",
        "terminal": True,
        "route": {"prev": ["split", "score", "triage"], "curr": "escalate", "next": []},
        "output": {"action": "escalate"},
    }
    page = _fan_out_page({"b1": escalated})
    route = json.loads(html.unescape(page.split("data-route='", 1)[1].split("'", 1)[0]))
    assert route["escalate"] == "visited", "only the branch went there"
    assert (route["split"], route["score"]) == ("visited", "visited")


def test_each_branch_is_one_line_its_result_cut_and_whole_when_opened() -> None:
    long = {"action": "archive", "text": "Great kettle, love it " * 40, "score": 2}
    branch = {"id": "b1", "status": "succeeded", "terminal": True, "actor": "triage", "output": long}
    page = _fan_out_page({"b1": branch})
    branches = page[page.index('id="branches-heading"') : page.index('id="result-heading"')]
    line = branches[branches.index("<li>") : branches.index("</li>")]
    assert "at triage" in line
    shown = html.unescape(line.split("<summary", 1)[1].split("<code>", 1)[1].split("</code>", 1)[0])
    assert "\n" not in shown, "one line of JSON"
    assert shown.startswith('{"action": "archive", "text": "Great kettle'), "in its own order"
    assert shown.endswith("…")
    whole = html.unescape(line.split('<pre class="json">', 1)[1].split("</pre>", 1)[0])
    assert json.loads(whole) == long, "the whole result, when the line is opened"
