"""Task requests that can never succeed are the client's error (4xx), never a 5xx that says retry."""

from __future__ import annotations

import boto3
import orjson
import pytest

from asya.status import TaskStore
from asya_gateway.service import TaskError, TaskService
from asya_gateway.settings import GatewaySettings
from asya_local.tables import EVENTS, TASKS
from tests.unit import hostile


@pytest.fixture
def service(task_store: TaskStore) -> TaskService:
    sqs = boto3.client("sqs")
    sqs.create_queue(QueueName="asya-n-a")
    return TaskService(
        GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS), tasks=task_store, sqs=sqs
    )


@pytest.mark.parametrize(
    ("payload", "headers", "status"),
    [
        (orjson.loads(hostile.nested(600)), {}, 422),
        ({"n": 1}, {"deep": orjson.loads(hostile.nested(400))}, 422),
        ("x" * hostile.SQS_LIMIT, {}, 413),
    ],
    ids=["payload nested 600 deep", "header nested 400 deep", "payload over the SQS limit"],
)
def test_a_task_that_can_never_be_sent_is_refused_without_a_record(
    service: TaskService, payload: object, headers: dict[str, object], status: int
) -> None:
    with pytest.raises(TaskError) as refused:
        service.create(payload=payload, route=["a"], headers=headers)
    assert refused.value.status == status
    assert service.list(None, 100, None)["tasks"] == [], "no task record is left pending"
