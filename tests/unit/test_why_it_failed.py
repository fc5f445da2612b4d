"""A task that failed says why, wherever it is read: a fan-out root failed by its branches names them,
with each one's own error type, message and traceback, the mesh's frames folded."""

from __future__ import annotations

import json
import re

from rich.console import Console

from asya.routing import error_details
from asya.task_store import TaskStore
from asya_cdk.loading import load_mesh
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.views import fold_traceback, task_view
from asya_local.console import app
from asya_local.console.topology import Topology
from asya_local.console.wording import how_far
from asya_local.task_text import task_table
from asya_local.testing.tables import EVENTS, TASKS
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats
from tests.unit.test_gateway_wait import service, tool_call
from tests.unit.test_joins import fan_join

TRACE = """Traceback (most recent call last):
  File "/var/task/asya/hop.py", line 10, in run
    output = run_with_timeout(call)
  File "/var/task/asya/timeouts.py", line 20, in run_with_timeout
    return call()
  File "/var/task/actors.py", line 5, in score
    price = float(row["price"])
  File "/opt/python/lib/python3.11/site-packages/pricing/parse.py", line 3, in parse
    raise ValueError(text)
ValueError: could not convert string to float: 'n/a'"""


def test_the_handlers_frames_stay_and_the_mesh_and_libraries_frames_fold() -> None:
    assert fold_traceback(TRACE).splitlines() == [
        "Traceback (most recent call last):",
        "  ... 2 frames of the mesh and its libraries",
        '  File "/var/task/actors.py", line 5, in score',
        '    price = float(row["price"])',
        "  ... 1 frame of the mesh and its libraries",
        "ValueError: could not convert string to float: 'n/a'",
    ]


def _failed_fan_out(store: TaskStore, root: str = "root") -> None:
    """A root whose own envelope succeeded (with an output) and one of whose two branches failed at
    `score` with the handler's own ValueError."""
    store.create({"id": root})
    store.register_branches(root, ["b1", "b2"])
    store.finish(root, root, "succeeded", {"output": '{"row": 1}'}, fanned_out=True)
    store.finish("b1", root, "succeeded", {}, parent_id=root)
    try:
        float("n/a")
    except ValueError as exc:
        error = error_details(exc)
    store.finish("b2", root, "failed", {"reason": "PolicyExhausted", "error": error, "actor": "score"}, parent_id=root)


def test_a_root_failed_by_its_branches_says_so_and_shows_no_branch_output_as_its_result(
    task_store: TaskStore,
) -> None:
    _failed_fan_out(task_store)
    record = task_store.get("root")
    assert record is not None
    view = task_view(record)
    assert view["status"] == "failed"
    assert view["reason"] == "BranchFailed"
    assert view["error"]["message"] == "1 of 3 branches failed"
    assert "output" not in view
    assert view["own_envelope"] == {"output": {"row": 1}}, "its own envelope ended well: its output is shown"


def test_the_gateway_names_the_failing_branches_with_their_own_error(
    task_store: TaskStore, gateway: TaskService
) -> None:
    _failed_fan_out(task_store)
    for view in (gateway.view("root"), gateway.wait("root", 1)[1]):
        [branch] = view["failed_branches"]
        assert (branch["id"], branch["status"], branch["actor"]) == ("b2", "failed", "score")
        assert branch["error"]["type"] == "ValueError"
        assert branch["error"]["message"] == "could not convert string to float: 'n/a'"
        assert branch["error"]["traceback"].endswith("ValueError: could not convert string to float: 'n/a'")


def test_an_mcp_tool_call_names_the_failing_branches(task_store: TaskStore) -> None:
    tasks = service(task_store, mcp_wait=5)

    def fail_every_task(_seconds: float) -> None:
        for item in task_store.client.scan(TableName=TASKS)["Items"]:
            if item["id"]["S"] not in ("b1", "b2") and "branch_ids" not in item:
                _failed_fan_out(task_store, item["id"]["S"])

    tasks.sleep = fail_every_task
    result = tool_call(tasks)
    assert result["isError"] is True
    structured = result["structuredContent"]
    assert isinstance(structured, dict)
    [branch] = structured["failed_branches"]
    assert (branch["id"], branch["actor"], branch["error"]["type"]) == ("b2", "score", "ValueError")


def test_asya_status_shows_the_error_type_message_traceback_and_failing_branches(
    task_store: TaskStore, gateway: TaskService
) -> None:
    _failed_fan_out(task_store)
    console = Console(width=300, record=True)
    console.print(task_table({**gateway.view("root"), "actor": "triage"}))  # its own envelope ended at triage
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in console.export_text().splitlines()[2:-1]}
    assert rows["reason"] == "BranchFailed"
    assert rows["progress"] == "1 of 3 branches failed (at score)", "how far, not a full bar"
    assert rows["failed at"] == "score", "where the console says it failed, not where its own envelope ended"
    assert "actor" not in rows
    assert rows["error"] == "1 of 3 branches failed", "the noun and the verb the console uses"
    assert rows["failed branch 1"] == "b2 failed at score: ValueError: could not convert string to float: 'n/a'"
    assert "output" not in rows


def test_a_canceled_fan_out_is_not_said_to_have_failed_by_its_branches(task_store: TaskStore) -> None:
    task_store.create({"id": "root"})
    task_store.register_branches("root", ["b1", "b2"])
    task_store.cancel("root")
    for envelope in ("b1", "b2", "root"):  # each envelope stopped at its next hop, and x-sink recorded it
        task_store.finish(envelope, "root", "canceled", {"reason": "Canceled"}, parent_id="root", fanned_out=True)
    record = task_store.get("root")
    assert record is not None
    view = task_view(record)
    assert view["status"] == "canceled"
    assert view.get("reason") != "BranchFailed"
    assert how_far(view) == "3 of 3 branches canceled", "said as canceled, as the console and the CLI say it"


def test_a_fan_out_whose_branches_failed_and_were_canceled_says_each() -> None:
    counts = {"total": 4, "open": 0, "succeeded": 2, "failed": 1, "canceled": 1}
    view = {"id": "root", "status": "failed", "branches": counts, "route": {}}
    assert how_far(view) == "1 failed and 1 canceled of 4 branches"


def test_the_console_puts_why_it_failed_first_and_marks_where_on_the_graph(
    task_store: TaskStore, gateway: TaskService
) -> None:
    """The failed fan-out's page as someone who did not write it reads it: the error and the failing
    branch (its handler's error type and message, not its error document) before anything else, and
    the graph marks the actor where the branch failed, not the root's own route, which ended well."""
    _failed_fan_out(task_store)
    root = {**gateway.view("root"), "route": {"prev": ["split", "score"], "curr": "triage", "next": []}}
    stand_in = FakeGateway()
    stand_in.known["root"] = root
    stand_in.known["b2"] = gateway.view("b2")
    console = app.Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), stand_in, "here")  # type: ignore[arg-type]
    page = console_client(console).get("/tasks/root").get_data(as_text=True)
    assert page.index('id="error-heading"') < page.index('id="branches-heading"') < page.index('id="result-heading"')
    branches = page[page.index('id="branches-heading"') :]
    assert re.search(r"<code>ValueError</code> <span[^>]*>could not convert string to float", branches)
    assert "&#34;details&#34;" not in branches, "the branch's error said, not its error document"
    route = json.loads(re.search(r"data-route='([^']*)'", page).group(1))  # type: ignore[union-attr]
    assert route == {"split": "visited", "score": "failed", "triage": "visited"}


def console_app_page(console: app.Console, task_id: str) -> str:
    return console_client(console).get(f"/tasks/{task_id}").get_data(as_text=True)


def test_a_task_whose_join_gave_up_says_which_branch_failed_and_where_as_people_count() -> None:
    """The reviews' case: the join tolerates 25 %, the second of three branches raised a ValueError at
    `score`. From the record the mesh wrote to what `asya status` prints: the branch counted from 1,
    its own error type (not the reason code `HandlerError`), the join's actor as where it failed, the
    branch listed by its id with its folded traceback, and no error payload shown as a result."""
    with fan_join({"tolerate": "25%"}) as mesh:
        task_id = mesh.run(["split", "score", "summary"], {"items": [1, "bad", 3]})
        settings = GatewaySettings(namespace="joins", tasks_table=TASKS, events_table=EVENTS)
        gateway = TaskService(settings, tasks=mesh.tasks)
        view = gateway.view(task_id)
        [branch] = view["failed_branches"]
        assert (branch["status"], branch["actor"], branch["branch"], branch["width"]) == ("failed", "score", 2, 3)
        assert branch["error"]["type"] == "ValueError"
        assert "frames of the mesh and its libraries" in branch["error"]["traceback"]
        assert branch["error"]["traceback"].endswith("ValueError: bad item")
        assert gateway.wait(task_id, 1)[1]["failed_branches"] == view["failed_branches"], "send --wait and MCP too"
        assert "output" not in view
        assert "output" not in gateway.wait(task_id, 1)[1]
        assert [hop["actor"] for hop in view["hops"]] == ["split", "score", "summary"], "the hops end at the join"
        assert all(hop["seconds"] is not None for hop in view["hops"])
        console = Console(width=300, record=True)
        console.print(task_table(view))
    stand_in = FakeGateway()
    stand_in.known[task_id] = view
    console_app = app.Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), stand_in, "here")  # type: ignore[arg-type]
    page = console_app_page(console_app, task_id)
    why = page[page.index('id="error-heading"') : page.index('id="route-heading"')]
    assert "failed at summary</strong>: <code>ValueError</code>: <span" in why, "at the join, the branch's cause"
    assert re.search(rf'From branch 2 of 3, <a href="/tasks/{branch["id"]}"><code>{branch["id"][:8]}</code></a>', why)
    assert "&#34;mro&#34;" not in page, "no error payload shown as the task's result"
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in console.export_text().splitlines()[2:-1]}
    assert rows["failed at"] == "summary", "where the task failed: at the join, not at the last hop claimed"
    assert rows["reason"] == "JoinFailed"
    assert rows["error"] == (
        f"1 of 3 branches failed (on_failure: tolerate 25%): branch 2 of 3 ({branch['id']}) ValueError: bad item"
    )
    assert rows["failed branch 2 of 3"] == f"{branch['id'][:8]} failed at score: ValueError: bad item"
    assert "output" not in rows
