"""Waiting for a task's end (`POST /mesh?wait=`, `GET /mesh/{id}?wait=`, MCP tool calls): the answer
comes as soon as the record shows the end, with the result's payload, and no later than the wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import orjson
import pytest

from asya.task_store import TaskStore
from asya.variables import WAIT_MAX_SECONDS
from asya_gateway.kept import ANSWER_MAX_BYTES, IN_MCP, IN_REST
from asya_gateway.mcp import McpEndpoint
from asya_gateway.service import TaskService
from asya_gateway.settings import Flow, GatewaySettings
from asya_gateway.task_error import TaskError
from asya_local.testing.tables import EVENTS, TASKS

BUCKET = "results"


class Clock:
    """Time that passes only when the waiter sleeps; `on_sleep` runs after each sleep (the mesh at work)."""

    def __init__(self, on_sleep: Callable[[int], None] = lambda _: None) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep = on_sleep

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps.append(seconds)
        self.on_sleep(len(self.sleeps))

    def __call__(self) -> float:
        return self.now


def service(tasks: TaskStore, mcp_wait: float = 0.0, clock: Clock | None = None) -> TaskService:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    sqs = boto3.client("sqs")
    sqs.create_queue(QueueName="asya-n-a")
    settings = GatewaySettings(
        namespace="n",
        tasks_table=TASKS,
        events_table=EVENTS,
        results_bucket=BUCKET,
        flows={"echo": Flow(name="echo", route=["a"])},
        mcp_wait_seconds=mcp_wait,
    )
    clock = clock or Clock()
    return TaskService(settings, tasks=tasks, sqs=sqs, sleep=clock.sleep, clock=clock)


def ends_at_sleep(tasks: TaskStore, task_id: str, at: int, details: dict[str, object]) -> Callable[[int], None]:
    def finish(sleeps: int) -> None:
        if sleeps == at:
            tasks.finish(task_id, task_id, "succeeded", details)

    return finish


def test_the_answer_comes_at_the_first_read_after_the_end(task_store: TaskStore) -> None:
    task_store.create({"id": "t1", "phase": "pending"})
    clock = Clock(ends_at_sleep(task_store, "t1", 3, {"output": '{"label": "even"}'}))
    ended, task = service(task_store, clock=clock).wait("t1", 10)
    assert ended
    assert task["status"] == "succeeded"
    assert task["output"] == {"label": "even"}
    assert clock.sleeps == [0.05, 0.1, 0.2]  # read, then twice as late each time


def test_a_task_still_running_is_answered_when_the_wait_runs_out(task_store: TaskStore) -> None:
    task_store.create({"id": "t1", "phase": "pending"})
    clock = Clock()
    ended, task = service(task_store, clock=clock).wait("t1", 3)
    assert not ended
    assert task["status"] == "pending"
    assert clock.now == pytest.approx(3)
    assert max(clock.sleeps) == 1.0  # polls at most once a second
    assert len(clock.sleeps) == 7  # 0.05, 0.1, 0.2, 0.4, 0.8, 1.0, and the 0.45 left


def test_a_wait_is_bounded_by_api_gateway(task_store: TaskStore) -> None:
    task_store.create({"id": "t1", "phase": "pending"})
    clock = Clock()
    service(task_store, clock=clock).wait("t1", 600)
    assert clock.now == pytest.approx(WAIT_MAX_SECONDS)


def test_a_result_kept_in_s3_is_read_into_the_answer(task_store: TaskStore) -> None:
    key = "results/n/t1/succeeded.json"
    tasks = service(task_store)
    tasks.kept.s3.put_object(Bucket=BUCKET, Key=key, Body=orjson.dumps({"id": "t1", "payload": {"text": "x" * 5000}}))
    task_store.create({"id": "t1"})
    task_store.finish("t1", "t1", "succeeded", {"result": f"s3://{BUCKET}/{key}"})
    ended, task = tasks.wait("t1", 1)
    assert ended
    assert task["output"] == {"text": "x" * 5000}
    assert task["result"] == f"s3://{BUCKET}/{key}"


def test_a_result_too_large_for_the_answer_is_a_short_lived_link(task_store: TaskStore) -> None:
    """2 MB kept (UTF-8), but over 6 MB in Lambda's answer, where JSON writes each `é` as `\\u00e9`:
    the answer carries a presigned link instead, and is not even read."""
    key = "results/n/t1/succeeded.json"
    tasks = service(task_store)
    tasks.kept.s3.put_object(Bucket=BUCKET, Key=key, Body=orjson.dumps({"id": "t1", "payload": "é" * 1_000_000}))
    task_store.create({"id": "t1"})
    task_store.finish("t1", "t1", "succeeded", {"result": f"s3://{BUCKET}/{key}"})
    ended, task = tasks.wait("t1", 1)
    assert ended
    assert "output" not in task
    assert task["output_url"].startswith(f"https://{BUCKET}.s3.amazonaws.com/{key}?")
    assert "Expires=" in task["output_url"]
    assert task["result"] == f"s3://{BUCKET}/{key}"
    assert IN_REST.size(task) < ANSWER_MAX_BYTES


def test_an_mcp_answer_carries_less_than_a_rest_one(task_store: TaskStore) -> None:
    """An MCP tool result holds the output twice (text and structured), the text once more encoded."""
    key = "results/n/t1/succeeded.json"
    tasks = service(task_store)
    tasks.kept.s3.put_object(Bucket=BUCKET, Key=key, Body=orjson.dumps({"id": "t1", "payload": "x" * 3_000_000}))
    task_store.create({"id": "t1"})
    task_store.finish("t1", "t1", "succeeded", {"result": f"s3://{BUCKET}/{key}"})
    assert tasks.wait("t1", 1)[1]["output"] == "x" * 3_000_000
    assert "output_url" in tasks.wait("t1", 1, IN_MCP)[1]


@pytest.mark.parametrize(
    "link",
    [
        "s3://results/results/n/other/succeeded.json",
        "s3://elsewhere/results/n/t1/succeeded.json",
        "https://x/y",
        "s3://results/results/n/t1/../other/succeeded.json",  # under the task's prefix, but not a key of it
    ],
)
def test_a_result_link_not_of_this_task_is_not_followed(task_store: TaskStore, link: str) -> None:
    """A result reported from outside the mesh (`POST /mesh/{id}/events`) is any text."""
    tasks = service(task_store)
    for key in ("results/n/other/succeeded.json", "results/n/t1/../other/succeeded.json"):
        tasks.kept.s3.put_object(Bucket=BUCKET, Key=key, Body=b'{"payload": "secret"}')
    task_store.create({"id": "t1"})
    task_store.finish("t1", "t1", "succeeded", {"result": link})
    ended, task = tasks.wait("t1", 1)
    assert ended
    assert "output" not in task


def test_waiting_for_an_unknown_task_is_a_404(task_store: TaskStore) -> None:
    with pytest.raises(TaskError) as refused:
        service(task_store).wait("nope", 1)
    assert refused.value.status == 404


def tool_call(tasks: TaskService) -> dict[str, object]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
    status, answer = McpEndpoint(tasks, lambda task_id: f"http://gw/{task_id}").handle(message)
    assert status == 200
    assert answer is not None
    result: dict[str, object] = answer["result"]
    return result


def finish_every_task(tasks: TaskStore, outcome: str, details: dict[str, Any]) -> Clock:
    """A clock during whose first sleep the mesh ends every task it was sent."""

    def finish(_sleeps: int) -> None:
        for item in tasks.client.scan(TableName=TASKS)["Items"]:
            task_id = item["id"]["S"]
            tasks.finish(task_id, task_id, outcome, details)

    return Clock(finish)


def test_a_tool_call_answers_with_the_result(task_store: TaskStore) -> None:
    clock = finish_every_task(task_store, "succeeded", {"output": "[1,2]"})
    result = tool_call(service(task_store, mcp_wait=5, clock=clock))
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "[1,2]"}]
    structured = result["structuredContent"]
    assert isinstance(structured, dict)
    assert (structured["status"], structured["output"]) == ("succeeded", [1, 2])


def test_a_tool_call_whose_task_failed_is_a_tool_error(task_store: TaskStore) -> None:
    failure = {"reason": "HandlerError", "error": {"type": "ValueError", "message": "boom"}}
    result = tool_call(service(task_store, mcp_wait=5, clock=finish_every_task(task_store, "failed", failure)))
    assert result["isError"] is True
    content = result["content"]
    assert isinstance(content, list)
    assert content[0]["text"].endswith("failed: ValueError: boom"), "the handler's own type, not the reason code"


def test_a_tool_call_that_does_not_wait_answers_with_the_task(task_store: TaskStore) -> None:
    clock = Clock()
    result = tool_call(service(task_store, mcp_wait=0, clock=clock))
    assert clock.sleeps == []
    assert result["isError"] is False
    structured = result["structuredContent"]
    assert isinstance(structured, dict)
    assert set(structured) == {"id", "status_url"}
    content = result["content"]
    assert isinstance(content, list)
    assert "still running" in content[0]["text"]
