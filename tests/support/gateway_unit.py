"""What the gateway's function runs with in the unit tests, in this process: fake credentials, its
region, and Powertools quiet (no metrics flushed, JSON logs)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya.entry import LambdaEntry
from asya.task_store import TaskStore
from asya_gateway import api
from asya_gateway.service import TaskService
from asya_gateway.settings import Flow, GatewaySettings
from asya_local.functions.lambda_shapes import REGION
from asya_local.testing.tables import EVENTS, TASKS, create_tables

UNIT_ENVIRONMENT = {
    "AWS_DEFAULT_REGION": REGION,
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_DEV": "false",
    "POWERTOOLS_METRICS_DISABLED": "true",
}
# The mesh's API key, as the local stack's own tools send it: its holder sees every task (docs/callers.md).
OPERATOR_KEY = ("x-api-key", "unit-operator-key")


@contextmanager
def gateway_on_moto(flows: dict[str, Flow], **settings: Any) -> Iterator[tuple[Any, str, TaskStore]]:
    """The gateway's function (`asya_gateway.api.lambda_handler`) on fresh moto tables, with actor `a`'s
    queue to send tasks to and the unit environment set; yields the SQS client, that queue's URL and the
    task store."""
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        for name, value in UNIT_ENVIRONMENT.items():
            patch.setenv(name, value)
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        client = boto3.client("dynamodb")
        create_tables(client)
        sqs = boto3.client("sqs")
        queue = sqs.create_queue(QueueName="asya-n-a")["QueueUrl"]
        config = GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS, flows=flows, **settings)
        tasks = TaskStore(TASKS, client=client)
        service = TaskService(config, tasks=tasks, sqs=sqs)
        patch.setattr(api, "lambda_handler", LambdaEntry(lambda: api.GatewayFunction(service)))
        yield sqs, queue, tasks
