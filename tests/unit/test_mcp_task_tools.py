"""Following a task from MCP alone (`task_status`, `task_result`, `task_cancel`): a task that outlasts
a flow tool's wait is no dead end for a host that speaks only MCP, and a caller reaches only its own
tasks, as over REST."""

from __future__ import annotations

from typing import Any

from asya.task_store import TaskStore
from asya_gateway.callers import OWNER_ATTRIBUTE, Caller
from asya_gateway.mcp import McpEndpoint
from asya_gateway.service import TaskService
from tests.unit.test_gateway_wait import Clock, ends_at_sleep, service, tool_call

ANA, BO = Caller(owner="iam:ana"), Caller(owner="iam:bo")
ADMIN = Caller(owner="iam:cy", admin=True)


def call(tasks: TaskService, name: str, arguments: Any) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    status, answer = McpEndpoint(tasks, lambda task_id: f"http://gw/{task_id}").handle(message)
    assert status == 200
    assert answer is not None
    result: dict[str, Any] = answer["result"]
    return result


def anas_task(tasks: TaskStore, task_id: str = "t1") -> str:
    tasks.create({"id": task_id, "phase": "pending", OWNER_ATTRIBUTE: ANA.owner})
    return task_id


def test_a_flow_tool_that_stops_waiting_says_to_call_task_result(task_store: TaskStore) -> None:
    result = tool_call(service(task_store, mcp_wait=0))
    task_id = result["structuredContent"]["id"]  # type: ignore[index]
    text = result["content"][0]["text"]  # type: ignore[index]
    assert f"Call the tool task_result with id '{task_id}'" in text
    assert f"http://gw/{task_id}" in text, "the status URL is still given"


def test_task_status_of_a_running_task_says_its_status_and_progress(task_store: TaskStore) -> None:
    task_id = anas_task(task_store)
    result = call(service(task_store).as_caller(ANA), "task_status", {"id": task_id})
    assert result["isError"] is False
    assert result["structuredContent"] == {"id": task_id, "status_url": f"http://gw/{task_id}", "status": "pending"} | {
        "progress": 0
    }
    assert "still running (pending, 0% done)" in result["content"][0]["text"]


def test_task_result_waits_for_the_end_and_answers_with_the_result(task_store: TaskStore) -> None:
    task_id = anas_task(task_store)
    clock = Clock(ends_at_sleep(task_store, task_id, 2, {"output": '{"label": "even"}'}))
    result = call(service(task_store, mcp_wait=5, clock=clock).as_caller(ANA), "task_result", {"id": task_id})
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": '{"label":"even"}'}]
    assert result["structuredContent"]["output"] == {"label": "even"}


def test_task_result_of_a_task_still_running_says_to_call_again(task_store: TaskStore) -> None:
    task_id = anas_task(task_store)
    clock = Clock()
    result = call(service(task_store, mcp_wait=3, clock=clock).as_caller(ANA), "task_result", {"id": task_id})
    assert sum(clock.sleeps) == 3, "it waited the tool's bound"
    assert result["isError"] is False
    assert "still running" in result["content"][0]["text"]
    assert "task_result" in result["content"][0]["text"]


def test_task_status_of_a_failed_task_is_its_error(task_store: TaskStore) -> None:
    task_id = anas_task(task_store)
    failure = {"reason": "HandlerError", "error": {"type": "ValueError", "message": "boom"}}
    task_store.finish(task_id, task_id, "failed", failure)
    result = call(service(task_store).as_caller(ANA), "task_status", {"id": task_id})
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"Task {task_id} failed: ValueError: boom"


def test_task_cancel_cancels_the_callers_own_task(task_store: TaskStore) -> None:
    task_id = anas_task(task_store)
    result = call(service(task_store).as_caller(ANA), "task_cancel", {"id": task_id})
    assert result["isError"] is False
    assert result["content"][0]["text"] == f"Task {task_id} is canceled."
    status = call(service(task_store).as_caller(ANA), "task_status", {"id": task_id})
    assert status["content"][0]["text"].startswith(f"Task {task_id} canceled")


def test_another_callers_task_is_unknown_and_is_not_canceled_an_admins_sees_it(task_store: TaskStore) -> None:
    task_id = anas_task(task_store)
    for name in ("task_status", "task_result", "task_cancel"):
        result = call(service(task_store).as_caller(BO), name, {"id": task_id})
        assert result["isError"] is True
        assert result["content"][0]["text"] == f"no task {task_id!r}", name
    assert task_store.get(task_id)["status"] == "pending"  # type: ignore[index]
    seen = call(service(task_store).as_caller(ADMIN), "task_status", {"id": task_id})
    assert seen["isError"] is False


def test_task_tools_are_listed_and_check_their_arguments(task_store: TaskStore) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    _, answer = McpEndpoint(service(task_store), lambda task_id: task_id).handle(message)
    assert answer is not None
    names = [tool["name"] for tool in answer["result"]["tools"]]
    assert names == ["echo", "task_status", "task_result", "task_cancel"]
    result = call(service(task_store), "task_result", {"task": "t1"})
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("invalid arguments for task_result")
