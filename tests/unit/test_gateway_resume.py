"""Resuming a task whose paused envelope is not in S3 yet (x-pause marks the task before it writes
the envelope). On AWS the gateway has s3:GetObject but not s3:ListBucket, so S3 answers such a key
with 403 AccessDenied rather than 404 NoSuchKey (moto always says NoSuchKey): both must be the
"retry" 409, never a 500."""

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
