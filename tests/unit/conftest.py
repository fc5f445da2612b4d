"""Unit tests drive `asya.lambda_handler` with SQS-shaped events against moto's in-process SQS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

import asya
from asya.config import SidecarConfig
from asya.sidecar import Sidecar, configure
from asya.status import TaskStore
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_local.lambda_shapes import REGION, LambdaContext, sqs_record
from asya_local.tables import EVENTS, TASKS, create_tables

NS = "unit"
QUEUES = ("a", "b", "c", "fallback", "x-sink", "x-sump")


@pytest.fixture(autouse=True)
def moto_without_authentication(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests use moto in this process without IAM. moto's settings are the process's: a local
    endpoint started earlier in the same run (the integration tests') authenticates every request
    until it stops, which is at the end of the session."""
    from moto import settings

    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", float("inf"))


@pytest.fixture(autouse=True)
def aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("POWERTOOLS_DEV", "false")


def envelope(payload: Any = None, curr: str = "a", next: tuple[str, ...] = ("b",), **fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "id": "env-1",
        "route": {"prev": [], "curr": curr, "next": list(next)},
        "headers": {},
        "payload": {"text": "hello"} if payload is None else payload,
    }
    document.update(fields)
    return document


class Mesh:
    """A namespace of queues in moto, and one actor's sidecar configured through `asya.lambda_handler`."""

    def __init__(self, sqs: Any) -> None:
        self.sqs = sqs
        self.sidecar: Sidecar | None = None

    def actor(self, handler: str, actor: str = "a", **env: str) -> Sidecar:
        variables = {"ASYA_NAMESPACE": NS, "ASYA_ACTOR_NAME": actor, "ASYA_HANDLER": f"tests.unit.handlers.{handler}"}
        variables.update(env)
        self.sidecar = configure(SidecarConfig.from_env(variables))
        return self.sidecar

    def deliver(
        self, *bodies: Any, actor: str = "a", timeout: float = 900.0, message_ids: list[str] | None = None
    ) -> dict[str, Any]:
        queue = f"asya-{NS}-{actor}"
        ids: list[str | None] = list(message_ids) if message_ids else [None] * len(bodies)
        records = [
            sqs_record(queue, body if isinstance(body, str) else json.dumps(body), ids[i])
            for i, body in enumerate(bodies)
        ]
        return asya.lambda_handler({"Records": records}, LambdaContext(f"asya-{NS}-{actor}", timeout_seconds=timeout))

    def messages(self, actor: str) -> list[dict[str, Any]]:
        """Everything visible in `asya-unit-<actor>`, received and deleted."""
        url = self.sqs.get_queue_url(QueueName=f"asya-{NS}-{actor}")["QueueUrl"]
        bodies: list[dict[str, Any]] = []
        while True:
            batch = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return bodies
            for message in batch:
                bodies.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def delayed(self, actor: str) -> int:
        url = self.sqs.get_queue_url(QueueName=f"asya-{NS}-{actor}")["QueueUrl"]
        attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
        return int(attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"])

    def only(self, actor: str) -> dict[str, Any]:
        found = self.messages(actor)
        assert len(found) == 1, f"expected one envelope in {actor}, found {found}"
        return found[0]

    def assert_empty(self, *actors: str) -> None:
        for actor in actors:
            assert self.messages(actor) == [], f"{actor} should be empty"


@pytest.fixture
def mesh() -> Iterator[Mesh]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        for name in QUEUES:
            sqs.create_queue(QueueName=f"asya-{NS}-{name}")
        yield Mesh(sqs)


@pytest.fixture
def task_store() -> Iterator[TaskStore]:
    """An empty tasks table (and events table) in moto's DynamoDB, through the store every writer uses."""
    with mock_aws():
        client = boto3.client("dynamodb")
        create_tables(client)
        yield TaskStore(TASKS, client=client)


@pytest.fixture
def gateway(task_store: TaskStore) -> TaskService:
    """The gateway's task service on the empty tables, with the queue of actor `a` to send tasks to."""
    sqs = boto3.client("sqs")
    sqs.create_queue(QueueName="asya-n-a")
    return TaskService(
        GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS), tasks=task_store, sqs=sqs
    )
