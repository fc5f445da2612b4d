"""Resuming a task whose paused envelope is not in S3 yet (x-pause marks the task before it writes
the envelope). On AWS the gateway has s3:GetObject but not s3:ListBucket, so S3 answers such a key
with 403 AccessDenied rather than 404 NoSuchKey (moto always says NoSuchKey): both must be the
"retry" 409, never a 500. And an input its pause did not ask for is a 400 naming the field, before
anything is read."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from botocore.exceptions import ClientError

from asya.task_store import TaskStore
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.task_error import TaskError
from asya_local.testing.tables import EVENTS, TASKS


class S3Refusing:
    """An S3 client whose GetObject fails as AWS's does, with the given error code."""

    def __init__(self, code: str) -> None:
        self.code = code

    def get_object(self, **_request: Any) -> Any:
        raise ClientError({"Error": {"Code": self.code, "Message": self.code}}, "GetObject")


@pytest.fixture
def paused_task(task_store: TaskStore) -> TaskStore:
    task_store.create({"id": "t1"})
    assert task_store.pause("t1", {"prompt": "approve?"}, dt.datetime.now(dt.UTC)) is not None
    return task_store


def service(tasks: TaskStore, code: str) -> TaskService:
    settings = GatewaySettings(namespace="t", tasks_table=TASKS, events_table=EVENTS, results_bucket="results")
    return TaskService(settings, tasks=tasks, s3=S3Refusing(code))


@pytest.mark.parametrize("code", ["AccessDenied", "NoSuchKey"])
def test_an_envelope_not_kept_yet_is_a_409_to_retry(paused_task: TaskStore, code: str) -> None:
    with pytest.raises(TaskError) as refused:
        service(paused_task, code).resume("t1", {"approved": True})
    assert refused.value.status == 409
    assert "not kept yet; retry" in str(refused.value)
    item = paused_task.get("t1")
    assert item is not None
    assert item["status"] == "paused"  # nothing was resumed


def test_other_s3_errors_are_not_hidden_as_a_retry(paused_task: TaskStore) -> None:
    with pytest.raises(ClientError):
        service(paused_task, "SlowDown").resume("t1", {"approved": True})


ASKED = {"prompt": "Approve the refund?", "fields": {"approved": {"type": "boolean"}, "amount": "number", "note": {}}}


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"score": 0.99}, "input.score: the pause asks for amount, approved, note only"),
        ({"approved": "yes"}, "input.approved: the pause asks for a boolean, got str"),
        ({"amount": True}, "input.amount: the pause asks for a number, got bool"),
    ],
    ids=["a field not asked for", "a text for a boolean", "a boolean for a number"],
)
def test_an_input_the_pause_did_not_ask_for_is_a_400_naming_the_field(
    task_store: TaskStore, given: dict[str, Any], named: str
) -> None:
    task_store.create({"id": "t2"})
    assert task_store.pause("t2", ASKED, dt.datetime.now(dt.UTC)) is not None
    with pytest.raises(TaskError) as refused:
        service(task_store, "NoSuchKey").resume("t2", given)
    assert (refused.value.status, str(refused.value)) == (400, named)
    assert (task_store.get("t2") or {})["status"] == "paused"


def test_an_input_of_the_fields_asked_for_goes_on_and_a_pause_without_fields_takes_any(
    task_store: TaskStore, paused_task: TaskStore
) -> None:
    task_store.create({"id": "t2"})
    assert task_store.pause("t2", ASKED, dt.datetime.now(dt.UTC)) is not None
    for task_id, given in (("t2", {"approved": True, "amount": 12, "note": [1]}), ("t1", {"anything": 1})):
        with pytest.raises(TaskError, match="not kept yet"):  # checked: on to the kept envelope
            service(task_store, "NoSuchKey").resume(task_id, given)
