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
from asya_local import cli, running_mesh, stack_option
from asya_local.gateway_client import GatewayClient, ShortIdError
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


@pytest.fixture
def client(service: TaskService, monkeypatch: pytest.MonkeyPatch) -> GatewayClient:
    """`asya`'s client of the gateway's function, which answers from `service`; the CLI's too."""
    found = GatewayClient("http://gateway", "k", through_the_function(service, monkeypatch))
    monkeypatch.setattr(running_mesh, "running_state", lambda: {})
    monkeypatch.setattr(stack_option, "running_state", lambda: {})
    monkeypatch.setattr(stack_option, "gateway_of", lambda _state, _token: found)
    return found


def test_the_cli_takes_a_short_id_of_an_old_task_in_capitals(
    client: GatewayClient, task_store: TaskStore, capsys: pytest.CaptureFixture[str]
) -> None:
    for number in range(120):  # newer tasks, branches of one root: more than the newest 100 records
        task_store.create({"id": f"new-{number:03d}", "root_id": "t11", "created_at": "2026-11-27T10:00:00.000Z"})
    assert client.task_id("T05") == "t05"
    assert cli.main(["status", "T05"]) == 1, "found: a task that was canceled"
    assert "t05" in capsys.readouterr().out


def test_a_whole_id_in_capitals_finds_its_task_and_one_no_task_has_is_asked_for_as_typed(
    client: GatewayClient, task_store: TaskStore
) -> None:
    whole = "f43b9e3e-bc96-5500-97e7-ca9be7166a68"
    task_store.create({"id": whole, "created_at": "2026-11-27T10:00:00.000Z"})
    assert client.task_id(whole.upper()) == whole, "as a page that shows ids in capitals gives it"
    unknown = "00000000-0000-4000-8000-00000000ABCD"
    assert client.task_id(unknown) == unknown, "the gateway's 404 then says no task has it"


def test_the_cli_says_which_tasks_a_short_id_names_and_why_none_or_a_short_one_will_not_do(
    client: GatewayClient, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ShortIdError) as several:
        client.task_id("T0")
    assert str(several.value) == "'T0' matches t00, t01, t02, t03, t04, t05, t06, t07, t08, t09: give more of the id"
    assert several.value.candidates == [f"t0{n}" for n in range(10)]
    assert cli.main(["status", "zz"]) == 2
    assert capsys.readouterr().err.strip() == ("asya: no task starts with 'zz': give its whole id")
    assert cli.main(["cancel", "t"]) == 2
    assert capsys.readouterr().err.strip() == (
        "asya: give at least 2 characters of a task's id, or its whole id (got 't')"
    )
