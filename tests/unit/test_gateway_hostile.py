"""Task requests that can never succeed are the client's error (4xx), never a 5xx that says retry."""

from __future__ import annotations

import orjson
import pytest

from asya_gateway.service import TaskService
from asya_gateway.task_error import TaskError
from tests.support import hostile


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
    gateway: TaskService, payload: object, headers: dict[str, object], status: int
) -> None:
    with pytest.raises(TaskError) as refused:
        gateway.create(payload=payload, route=["a"], headers=headers)
    assert refused.value.status == status
    assert gateway.listing.page(None, 100, None)["tasks"] == [], "no task record is left pending"
