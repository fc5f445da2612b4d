"""A whole mesh in one process: moto's in-memory AWS for the queues, a pump for the event sources.

Each actor gets its own `Sidecar` built from the same variables its Lambda function would have, and
the pump delivers `ReceiveMessage` batches to it as Lambda's SQS event source mapping would: partial
batch responses decide which messages are deleted. Good for tests of a pipeline and for a first look;
the local stack (`asya up`) is the full-fidelity version with a real endpoint.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import boto3
from moto import mock_aws

from asya.config import SidecarConfig
from asya.envelope import new_envelope
from asya.names import SINK, SUMP, resource_name
from asya.sidecar import Sidecar
from asya.variables import ACTOR, HANDLER, NAMESPACE
from asya_local.functions.lambda_shapes import REGION, LambdaContext, invoke_with_batch

Function = Callable[[dict[str, Any], Any], dict[str, Any]]


class InProcessMesh:
    """`handlers`: actor → handler string, each run by its own sidecar with the variables `env` and its
    own in `actor_env`; `functions`: other queues' Lambda handlers to run too (e.g. the crew's), actor →
    `lambda_handler`-like callable."""

    def __init__(
        self,
        namespace: str,
        handlers: Mapping[str, str],
        env: Mapping[str, str] | None = None,
        functions: Mapping[str, Function] | None = None,
        actor_env: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.namespace = namespace
        self.handlers = dict(handlers)
        self.env = dict(env or {})
        self.actor_env = {actor: dict(variables) for actor, variables in (actor_env or {}).items()}
        self.functions: dict[str, Function] = dict(functions or {})
        self.hops = 0  # envelopes delivered to any function
        self.sidecars: dict[str, Sidecar] = {}
        self._mock = mock_aws()
        self._sqs: Any = None
        self._urls: dict[str, str] = {}

    def __enter__(self) -> InProcessMesh:
        self._mock.start()
        self._sqs = boto3.client("sqs", region_name=REGION)
        for actor in [*self.handlers, SINK, SUMP]:
            self._urls[actor] = self._sqs.create_queue(QueueName=resource_name(self.namespace, actor))["QueueUrl"]
        for actor, handler in self.handlers.items():
            names = {NAMESPACE.name: self.namespace, ACTOR.name: actor, HANDLER.name: handler}
            variables = {**self.env, **self.actor_env.get(actor, {}), **names}
            self.sidecars[actor] = Sidecar(SidecarConfig.from_env(variables))
            self.functions.setdefault(actor, self.sidecars[actor].handle)
        return self

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self._mock.stop()

    def send(self, route: list[str], payload: Any, headers: dict[str, Any] | None = None) -> str:
        """Put a new envelope on the first actor's queue, as a producer would."""
        envelope_id = str(uuid.uuid4())
        body = new_envelope(envelope_id, route, payload, headers)
        self._sqs.send_message(QueueUrl=self._urls[route[0]], MessageBody=json.dumps(body))
        return envelope_id

    def run_until_idle(self, max_batches: int = 10_000) -> int:
        """Deliver batches to actors until no actor queue has a visible message; returns batches run."""
        batches = 0
        while batches < max_batches:
            delivered = [self._deliver_one_batch(actor) for actor in self.functions]
            batches += sum(delivered)
            if not any(delivered):
                return batches
        raise RuntimeError(f"mesh still busy after {max_batches} batches")

    def _deliver_one_batch(self, actor: str) -> bool:
        url = self._urls[actor]
        messages = self._sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return False
        context = LambdaContext(resource_name(self.namespace, actor))
        invoke_with_batch(self.functions[actor], self._sqs, url, messages, context)
        self.hops += len(messages)
        return True

    def drain(self, actor: str) -> list[dict[str, Any]]:
        """Receive and delete everything in a queue (x-sink and x-sump hold the results here)."""
        found: list[dict[str, Any]] = []
        while messages := self._sqs.receive_message(QueueUrl=self._urls[actor], MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            for message in messages:
                found.append(json.loads(message["Body"]))
                self._sqs.delete_message(QueueUrl=self._urls[actor], ReceiptHandle=message["ReceiptHandle"])
        return found
