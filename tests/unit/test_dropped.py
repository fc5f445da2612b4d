"""What `asya up` says it drops as it stops: counted from the local stack's tables, never in the
stop's way."""

from __future__ import annotations

import time
from typing import Any

import pytest

from asya_local import dropped
from asya_local.dropped import Dropped, count_dropped, count_in_time, stopping_line
from asya_local.testing.tables import SUMP, TASKS


def _task(client: Any, task_id: str, status: str, root: str | None = None) -> None:
    item = {"id": {"S": task_id}, "status": {"S": status}, "created_at": {"S": "2026-11-29T10:00:00Z"}}
    if root is not None:
        item["root_id"] = {"S": root}
    client.put_item(TableName=TASKS, Item=item)


def test_the_stop_counts_tasks_by_status_roots_only_and_x_sump_entries(dynamodb: Any) -> None:
    for number, status in enumerate(["pending", "running", "running", "paused", "succeeded", "failed", "canceled"]):
        _task(dynamodb, f"t{number}", status)
    _task(dynamodb, "t1-branch", "running", root="t1")  # a branch goes with its task: not counted apart
    for number in range(3):
        dynamodb.put_item(TableName=SUMP, Item={"id": {"S": f"e{number}"}, "redrives": {"N": "0"}})

    counted = count_dropped(dynamodb, TASKS, SUMP)

    assert counted == Dropped(running=3, paused=1, ended=3, sump=3)
    assert stopping_line(counted) == (
        "stopping, dropping 3 running tasks, 1 paused, 3 ended and 3 entries in x-sump: "
        "a local stack keeps nothing once stopped"
    )


@pytest.mark.parametrize(
    ("counted", "said"),
    [
        (Dropped(0, 0, 0, 0), "stopping: no tasks, x-sump empty (a local stack keeps nothing once stopped)"),
        (Dropped(1, 0, 0, 0), "stopping, dropping 1 running task: a local stack keeps nothing once stopped"),
        (
            Dropped(0, 2, 0, 1),
            "stopping, dropping 2 paused tasks and 1 entry in x-sump: a local stack keeps nothing once stopped",
        ),
        (None, "stopping: a local stack keeps nothing once stopped"),
    ],
)
def test_the_stopping_line_names_only_what_there_is(counted: Dropped | None, said: str) -> None:
    assert stopping_line(counted) == said


class _Broken:
    def get_paginator(self, _name: str) -> Any:
        raise ConnectionError("the endpoint is gone")


class _Stuck:
    def get_paginator(self, _name: str) -> Any:
        time.sleep(5)
        raise AssertionError("never answered in time")


@pytest.mark.parametrize("client", [_Broken(), _Stuck()], ids=["fails", "hangs"])
def test_a_count_that_fails_or_hangs_leaves_the_stop_its_plain_line(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dropped, "COUNT_SECONDS", 0.2)
    started = time.monotonic()
    assert count_in_time(client, TASKS, SUMP) is None
    assert time.monotonic() - started < 1
