"""What the gateway's function runs with in the unit tests, in this process: fake credentials, its
region, and Powertools quiet (no metrics flushed, JSON logs)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya.entry import LambdaEntry
from asya.task_store import TaskStore
from asya_gateway import api, request_context
from asya_gateway.function import GatewayFunction
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


def serve(patch: pytest.MonkeyPatch, build: Callable[[], GatewayFunction]) -> None:
    """The gateway's entry point runs what `build` makes at its first event: under both its names, the
    function module's (`asya_gateway.api.lambda_handler`, which the tests call) and the one its routes
    read (`asya_gateway.request_context`)."""
    entry = LambdaEntry(build)
    patch.setattr(api, "lambda_handler", entry)
    patch.setattr(request_context, "lambda_handler", entry)


@contextmanager
def function_on_moto(
    settings: GatewaySettings, actors: tuple[str, ...] = ("a",), bucket: str | None = None
) -> Iterator[TaskService]:
    """The gateway's function (`asya_gateway.api.lambda_handler`) with `settings`, on fresh moto tables,
    with the queues of `actors` and a results `bucket` made, and the unit environment set; yields the
    task service the function runs (as the operator)."""
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        for name, value in UNIT_ENVIRONMENT.items():
            patch.setenv(name, value)
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        client = boto3.client("dynamodb")
        create_tables(client)
        sqs = boto3.client("sqs")
        for actor in actors:
            sqs.create_queue(QueueName=settings.queue_name(actor))
        s3 = boto3.client("s3") if bucket else None
        if s3 is not None and bucket:
            s3.create_bucket(Bucket=bucket)
        service = TaskService(settings, tasks=TaskStore(TASKS, client=client), sqs=sqs, s3=s3)
        serve(patch, lambda: GatewayFunction(service))
        yield service


@contextmanager
def gateway_on_moto(flows: dict[str, Flow], **settings: Any) -> Iterator[tuple[Any, str, TaskStore]]:
    """`function_on_moto` of namespace `n` with these flows and settings; yields the SQS client, actor
    `a`'s queue URL and the task store."""
    config = GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS, flows=flows, **settings)
    with function_on_moto(config) as service:
        yield service.sqs, service.sqs.get_queue_url(QueueName="asya-n-a")["QueueUrl"], service.tasks
