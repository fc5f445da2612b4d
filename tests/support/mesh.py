"""The unit tests' mesh: a namespace of queues in moto's in-process SQS, and one actor's sidecar
driven through `asya.lambda_handler` with SQS-shaped events."""

from __future__ import annotations

import json
from typing import Any

import asya
from asya.config import SidecarConfig
from asya.sidecar import Sidecar, configure
from asya_local.functions.lambda_shapes import LambdaContext, sqs_record

NS = "unit"
QUEUES = ("a", "b", "c", "fallback", "x-sink", "x-sump")


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
        variables = {
            "ASYA_NAMESPACE": NS,
            "ASYA_ACTOR_NAME": actor,
            "ASYA_HANDLER": f"tests.support.handlers.{handler}",
        }
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
