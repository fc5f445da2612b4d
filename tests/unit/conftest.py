"""Unit tests drive `asya.lambda_handler` with SQS-shaped events against moto's in-process SQS."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import httpx2
import pytest
from moto import mock_aws

from asya.task_store import TaskStore
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_local.functions.gateway_server import GatewayServer
from asya_local.functions.lambda_shapes import REGION
from asya_local.testing.tables import EVENTS, TASKS, create_tables
from tests.support.local_gateway import StandIn, serving
from tests.support.mesh import NS, QUEUES, Mesh


@pytest.fixture(autouse=True)
def aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("POWERTOOLS_DEV", "false")


@pytest.fixture
def mesh() -> Iterator[Mesh]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        for name in QUEUES:
            sqs.create_queue(QueueName=f"asya-{NS}-{name}")
        yield Mesh(sqs)


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    """Moto's DynamoDB with the local stack's empty tables (tasks, events, x-sump ...), as a client."""
    with mock_aws():
        client = boto3.client("dynamodb")
        create_tables(client)
        yield client


@pytest.fixture
def task_store(dynamodb: Any) -> TaskStore:
    """An empty tasks table (and events table) in moto's DynamoDB, through the store every writer uses."""
    return TaskStore(TASKS, client=dynamodb)


@pytest.fixture
def gateway(task_store: TaskStore) -> TaskService:
    """The gateway's task service on the empty tables, with the queue of actor `a` to send tasks to."""
    sqs = boto3.client("sqs")
    sqs.create_queue(QueueName="asya-n-a")
    return TaskService(
        GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS), tasks=task_store, sqs=sqs
    )


# The local API Gateway stand-in (`tests.support.local_gateway`): its invocations, and its streams.
@pytest.fixture(scope="module")
def local_api() -> Iterator[tuple[GatewayServer, httpx2.Client]]:
    """One API for the tests that need no fresh one (an environment's init takes a few tenths of a second)."""
    with serving() as started:
        yield started


@pytest.fixture
def served(local_api: tuple[GatewayServer, httpx2.Client]) -> tuple[StandIn, httpx2.Client]:
    server, client = local_api
    stand_in = StandIn()
    server.gateway.open_event_stream = stand_in.open_event_stream
    return stand_in, client
