"""Short ids resolved by the gateway (`GET /mesh?id_prefix=`): over every task, however old, whatever
the case typed, ambiguous ones answered with their candidates, and a prefix too short for the index
refused with the length it needs. Every way a record is made writes the index's keys."""

from __future__ import annotations

from typing import Any

import pytest

from asya.task_record import Report
from asya.task_store import TaskStore
from asya_gateway.id_prefix import tasks_starting_with
from asya_gateway.service import TaskService
from asya_gateway.task_error import TaskError
from tests.support.listed_tasks import get, through_the_function, twelve_tasks


@pytest.fixture
def service(task_store: TaskStore) -> TaskService:
    return twelve_tasks(task_store)


def found(service: TaskService, given: str, limit: int = 10) -> tuple[list[str], bool]:
    answer = tasks_starting_with(service.listing, given, limit)
    return [task["id"] for task in answer["tasks"]], answer["more"]


def test_a_prefix_finds_its_tasks_whatever_the_case_typed(service: TaskService) -> None:
    assert found(service, "t1") == (["t10", "t11"], False)
    assert found(service, "T1") == (["t10", "t11"], False), "typed in capitals"
    assert found(service, "t07") == (["t07"], False)
    assert found(service, "zz") == ([], False)


def test_an_id_keeps_its_case_and_is_found_by_any_case(service: TaskService, task_store: TaskStore) -> None:
    task_store.create({"id": "Order-7A"})
    assert found(service, "order-7a") == (["Order-7A"], False), "the id as it was given"
    assert found(service, "ORDER") == (["Order-7A"], False)


def test_an_ambiguous_prefix_answers_its_candidates_and_whether_there_are_more(service: TaskService) -> None:
    assert found(service, "t0", limit=10) == ([f"t0{n}" for n in range(10)], False)
    assert found(service, "t0", limit=3) == (["t00", "t01", "t02"], True)


def test_the_task_whose_whole_id_it_is_comes_first(service: TaskService, task_store: TaskStore) -> None:
    task_store.create({"id": "t1"})
    assert found(service, "t1") == (["t1", "t10", "t11"], False)


def test_a_prefix_shorter_than_the_index_head_is_refused_unless_it_is_a_whole_id(
    service: TaskService, task_store: TaskStore
) -> None:
    with pytest.raises(TaskError) as refused:
        found(service, "t")
    assert refused.value.status == 400
    assert str(refused.value) == "id_prefix: give at least 2 characters of a task's id, or its whole id (got 't')"
    task_store.create({"id": "x"})
    assert found(service, "x") == (["x"], False)


def test_a_task_far_older_than_the_newest_hundred_is_found(service: TaskService, task_store: TaskStore) -> None:
    for number in range(120):
        task_store.create({"id": f"new-{number:03d}", "created_at": f"2026-11-27T10:00:{number % 60:02d}.000Z"})
    assert found(service, "t05") == (["t05"], False)


def test_a_record_written_before_the_index_is_found_by_its_whole_id_only(
    service: TaskService, task_store: TaskStore
) -> None:
    old = {"id": {"S": "c0ffee00-old"}, "status": {"S": "failed"}, "created_at": {"S": "2026-11-01T10:00:00.000Z"}}
    task_store.client.put_item(TableName=task_store.table, Item=old)
    assert found(service, "c0ffee") == ([], False)
    assert found(service, "c0ffee00-old") == (["c0ffee00-old"], False)


def route(actor: str) -> dict[str, Any]:
    return {"prev": [], "curr": actor, "next": []}


def test_every_way_a_record_is_made_lets_its_prefix_find_it(service: TaskService, task_store: TaskStore) -> None:
    task_store.report(Report(task_id="Hop-made", actor="a", route=route("a"), phase="processing", progress=0.0))
    task_store.admit("Admitted", "message-1")
    task_store.create({"id": "Root", "branch_ids": {"Root-child"}})
    task_store.cancel("Root")  # its branch had no record yet: the cancel makes it
    task_store.finish("Branch-ended", "Root", "succeeded", {"output": 1})  # x-sink, before any hop claimed it
    task_store.finish("Alone", "Alone", "succeeded", {"output": 1})  # a task sent straight to x-sink
    for made in ("Hop-made", "Admitted", "Root-child", "Branch-ended", "Alone"):
        assert found(service, made.upper()) == ([made], False), made


def test_the_gateway_answers_a_prefix_and_refuses_it_with_a_filter(
    service: TaskService, monkeypatch: pytest.MonkeyPatch
) -> None:
    transport = through_the_function(service, monkeypatch)
    status, page = get(transport, id_prefix="T0", limit="2")
    assert (status, [task["id"] for task in page["tasks"]], page["more"]) == (200, ["t00", "t01"], True)
    assert page["tasks"][0]["status"] == "running", "each task as a listing shows it"
    status, refused = get(transport, id_prefix="t0", status="failed", roots="true")
    assert (status, refused["message"]) == (
        400,
        "id_prefix: give it without status, roots (it finds tasks by their id alone)",
    )
    assert get(transport, id_prefix="t0", status="all")[0] == 200, "all statuses is no filter"
