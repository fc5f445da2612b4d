"""A join that gave up counts every branch that failed (`asya.join_failure`): those whose failures come
after it gave up, the root's own envelope among them, are counted on its record once each, in any
order with x-sink's record of the join's failure, and every surface says the true count."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from asya.join_failure import FAILED_BRANCHES, FAILED_COUNT, failed_branch, join_failure_message, later_entry
from asya.task_store import TaskStore
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.views import task_view
from asya_local.task_text import task_table
from asya_local.testing.tables import EVENTS, TASKS
from tests.unit.test_joins import ROUTE, fan_join


def _rows(view: dict[str, Any]) -> dict[str, str]:
    """`asya status`'s table as name → value."""
    console = Console(width=400, record=True)
    console.print(task_table(view))
    lines = console.export_text().splitlines()[2:-1]
    return {line.split("│")[1].strip(): line.split("│")[2].strip() for line in lines}


@pytest.mark.parametrize("redelivered", [False, True], ids=["once", "every-batch-twice"])
def test_a_join_that_failed_fast_counts_the_branches_that_failed_after_it_gave_up(redelivered: bool) -> None:
    """The reviews' case: two of three branches fail, the root's own envelope (branch 1) the second to
    reach the join, after the join gave up at branch 3. Before, the task said "1 of 3 branches failed"
    and named branch 3 alone."""
    with fan_join(redelivered=redelivered) as mesh:
        task_id = mesh.run(ROUTE, {"items": ["bad", 2, "bad"]})
        settings = GatewaySettings(namespace="joins", tasks_table=TASKS, events_table=EVENTS)
        view = TaskService(settings, tasks=mesh.tasks).view(task_id)
    assert (view["status"], view["reason"]) == ("failed", "JoinFailed")
    assert view["error"]["message"].startswith("2 of 3 branches failed (on_failure: fail_fast): branch 3 of 3")
    assert f"branch 1 of 3 ({task_id}) ValueError: bad item" in view["error"]["message"]
    assert [(b["branch"], b["status"], b["actor"], b["error"]["type"]) for b in view["failed_branches"]] == [
        (1, "failed", "score", "ValueError"),
        (3, "failed", "score", "ValueError"),
    ], "the root's own envelope by its own error, not by the join's failure its record holds"
    rows = _rows(view)
    assert rows["error"].startswith("2 of 3 branches failed")
    assert rows["failed branch 1 of 3"] == "the task's own envelope failed at score: ValueError: bad item"


def test_a_join_given_up_at_the_roots_own_envelope_names_it_by_its_own_failure() -> None:
    """The root's own envelope is one of the branches the join gathers (branch 1): failing alone, it
    is the one failed branch the view lists, at the actor it failed at with its handler's error, not
    at the join with the join's count, which its record (the task's) holds."""
    with fan_join() as mesh:
        task_id = mesh.run(ROUTE, {"items": ["bad", 2, 3]})
        settings = GatewaySettings(namespace="joins", tasks_table=TASKS, events_table=EVENTS)
        view = TaskService(settings, tasks=mesh.tasks).view(task_id)
    assert (view["status"], view["reason"], view["actor"]) == ("failed", "JoinFailed", "summary")
    assert view["error"]["message"].startswith("1 of 3 branches failed")
    [own] = view["failed_branches"]
    assert (own["id"], own["branch"], own["width"], own["status"], own["actor"]) == (task_id, 1, 3, "failed", "score")
    assert own["error"] == {"type": "ValueError", "message": "bad item"}


def _join_failed(task_store: TaskStore, named: list[dict[str, Any]], width: int) -> None:
    """x-sink records the join's failure as the join sent it when it gave up."""
    message = join_failure_message(len(named), width, "fail_fast", named)
    error = {"message": message, "type": None, FAILED_BRANCHES: named, FAILED_COUNT: len(named)}
    task_store.finish("root", "root", "failed", {"reason": "JoinFailed", "error": error, "actor": "summary"})


def _branch(slot: int, width: int = 12) -> dict[str, Any]:
    status = {"phase": "failed", "actor": "score", "error": {"type": "KeyError", "message": f"no {slot}"}}
    return failed_branch({"id": f"b{slot}", "status": status}, slot, width)


@pytest.mark.parametrize("x_sink_first", [True, False], ids=["x-sink-first", "x-sink-last"])
def test_later_failures_count_once_each_in_any_order(task_store: TaskStore, x_sink_first: bool) -> None:
    task_store.create({"id": "root"})
    if x_sink_first:
        _join_failed(task_store, [_branch(0)], 12)
    task_store.count_join_failure("root", 3, later_entry(_branch(2)))  # the third failure came first
    task_store.count_join_failure("root", 2, later_entry(_branch(1)))  # the second, delivered after it
    task_store.count_join_failure("root", 2, later_entry(_branch(1)))  # and delivered again
    task_store.count_join_failure("root", 11, None)  # the eleventh, past those the error names
    if not x_sink_first:
        _join_failed(task_store, [_branch(0)], 12)
    record = task_store.get("root")
    assert record is not None
    error = task_view(record)["error"]
    assert error["message"].startswith("11 of 12 branches failed (on_failure: fail_fast): branch 1 of 12 (b0)")
    assert error[FAILED_COUNT] == 11
    assert [branch["branch"] for branch in error[FAILED_BRANCHES]] == [1, 2, 3]
    assert error["message"].count("KeyError") == 3


def test_a_join_with_no_failure_after_it_gave_up_is_said_as_it_was(task_store: TaskStore) -> None:
    task_store.create({"id": "root"})
    _join_failed(task_store, [_branch(0)], 12)
    record = task_store.get("root")
    assert record is not None
    assert task_view(record)["error"]["message"].startswith("1 of 12 branches failed (on_failure: fail_fast)")
