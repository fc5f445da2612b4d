"""Listing tasks by status reads a keys-only index, then the records: newest first, whole records,
pages that continue where the last one ended."""

from __future__ import annotations

import pytest

from asya.task_store import TaskStore
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_local.testing.tables import EVENTS, TASKS


@pytest.fixture
def service(task_store: TaskStore) -> TaskService:
    for number in range(5):
        status = "running" if number % 2 else "pending"
        created = f"2026-11-23T10:00:0{number}Z"
        task_store.create({"id": f"t{number}", "status": status, "created_at": created, "flow": "triage"})
    return TaskService(GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS), tasks=task_store)


def test_a_listing_by_status_shows_whole_records_newest_first(service: TaskService) -> None:
    page = service.listing.page("pending", limit=10, cursor=None)
    assert [task["id"] for task in page["tasks"]] == ["t4", "t2", "t0"]
    assert {task["status"] for task in page["tasks"]} == {"pending"}
    assert {task.get("flow") for task in page["tasks"]} == {"triage"}  # not in the index: read from the record
    assert page["next_cursor"] is None


def test_a_listing_by_status_pages_through_every_task_once(service: TaskService) -> None:
    first = service.listing.page("pending", limit=2, cursor=None)
    assert first["next_cursor"] is not None
    second = service.listing.page("pending", limit=2, cursor=first["next_cursor"])
    assert [task["id"] for task in first["tasks"] + second["tasks"]] == ["t4", "t2", "t0"]


def test_a_listing_keeps_a_flow_roots_only_and_what_started_since(task_store: TaskStore) -> None:
    """What the console asks for: a status's newest tasks of one flow, started lately, no branches."""
    from asya_gateway.listing import TaskFilter

    records = [
        ("a", "review", None, "2026-11-26T10:00:00.000Z"),
        ("b", "triage", None, "2026-11-26T10:05:00.000Z"),
        ("c", None, "b", "2026-11-26T10:05:01.000Z"),  # b's branch
        ("d", "triage", None, "2026-11-26T09:00:00.000Z"),
    ]
    for task_id, flow, root, created in records:
        task_store.create(
            {"id": task_id, "status": "running", "created_at": created}
            | ({"flow": flow} if flow else {})
            | ({"root_id": root} if root else {})
        )
    service = TaskService(GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS), tasks=task_store)

    def listed(status: str | None, where: TaskFilter) -> list[str]:
        return sorted(task["id"] for task in service.listing.page(status, limit=50, cursor=None, where=where)["tasks"])

    for status in ("running", None):  # one status's index, and every status's merged
        assert listed(status, TaskFilter(roots=True)) == ["a", "b", "d"]
        assert listed(status, TaskFilter(flow="triage")) == ["b", "d"]
        assert listed(status, TaskFilter(since="2026-11-26T10:00:00.000Z", roots=True)) == ["a", "b"]
        assert listed(status, TaskFilter(since="2026-11-26T10:00:00.000Z")) == ["a", "b", "c"]


def test_the_flows_are_listed_with_their_routes(task_store: TaskStore) -> None:
    from asya_gateway.settings import Flow

    flows = {"triage": Flow("triage", ["split", "score"], "Score reviews", 300.0, {"type": "object"})}
    settings = GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS, flows=flows)
    assert TaskService(settings, tasks=task_store).flows() == {
        "flows": {
            "triage": {
                "route": ["split", "score"],
                "description": "Score reviews",
                "timeout": 300.0,
                "input_schema": {"type": "object"},
            }
        }
    }


def test_a_filtered_page_is_filled_past_a_fan_out_newer_than_its_root(task_store: TaskStore) -> None:
    """Newest first, a root's branches come before it: the listing reads on until the page is full."""
    from asya_gateway.listing import TaskFilter

    task_store.create({"id": "root", "status": "running", "created_at": "2026-11-26T10:00:00.000Z", "flow": "f"})
    for number in range(30):
        created = f"2026-11-26T10:00:{number + 1:02d}.000Z"
        task_store.create({"id": f"b{number:02d}", "status": "running", "created_at": created, "root_id": "root"})
    service = TaskService(GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS), tasks=task_store)
    page = service.listing.page("running", limit=5, cursor=None, where=TaskFilter(roots=True))
    assert [task["id"] for task in page["tasks"]] == ["root"]
    everything = service.listing.page("running", limit=5, cursor=None)
    assert len(everything["tasks"]) == 5, "unfiltered, a page is one read"
    assert everything["next_cursor"] is not None
