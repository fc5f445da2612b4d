"""Listing tasks by status reads a keys-only index, then the records: newest first, whole records,
pages that continue where the last one ended."""

from __future__ import annotations

import pytest

from asya.status import TaskStore
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_local.tables import EVENTS, TASKS


@pytest.fixture
def service(task_store: TaskStore) -> TaskService:
    for number in range(5):
        status = "running" if number % 2 else "pending"
        created = f"2026-11-23T10:00:0{number}Z"
        task_store.create({"id": f"t{number}", "status": status, "created_at": created, "flow": "triage"})
    return TaskService(GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS), tasks=task_store)


def test_a_listing_by_status_shows_whole_records_newest_first(service: TaskService) -> None:
    page = service.list("pending", limit=10, cursor=None)
    assert [task["id"] for task in page["tasks"]] == ["t4", "t2", "t0"]
    assert {task["status"] for task in page["tasks"]} == {"pending"}
    assert {task.get("flow") for task in page["tasks"]} == {"triage"}  # not in the index: read from the record
    assert page["next_cursor"] is None


def test_a_listing_by_status_pages_through_every_task_once(service: TaskService) -> None:
    first = service.list("pending", limit=2, cursor=None)
    assert first["next_cursor"] is not None
    second = service.list("pending", limit=2, cursor=first["next_cursor"])
    assert [task["id"] for task in first["tasks"] + second["tasks"]] == ["t4", "t2", "t0"]
