"""A whole mesh in one process: moto's in-memory AWS for the queues, a pump for the event sources.

Each actor gets its own `Sidecar` built from the same variables its Lambda function would have, and
the pump delivers `ReceiveMessage` batches to it as Lambda's SQS event source mapping would: partial
batch responses decide which messages are deleted, and a function that raises deletes nothing, so its
batch comes back after the visibility timeout. Waits pass in no time (`asya_local.testing.queue_clock`).
Every delivery is logged (`deliveries`). Good for tests of a pipeline and for a first look; the mesh
file's own harness (`asya_local.testing.harness`) builds one with the crew and the gateway, and the
local stack (`asya up`) is the full-fidelity version with a real endpoint.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
from asya_local.testing.queue_clock import QueueClock

Function = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass(frozen=True)
class Delivery:
    """One envelope handed to a function: `retried` when the function's answer left it in its queue
    (a partial batch failure, or the function raised `error`), to come back later."""

    actor: str
    envelope: dict[str, Any]
    receive_count: int
    retried: bool = False
    error: BaseException | None = None


class InProcessMesh:
    """`handlers`: actor → handler string, each run by its own sidecar with the variables `env` and its
    own in `actor_env`; `functions`: other queues' Lambda handlers to run too (e.g. the crew's), actor →
    `lambda_handler`-like callable; `queues`: queue → its attributes, for those that need some (made in
    this order, so a dead-letter queue comes before the queues that name it); `batch_size`: the most
    messages one invocation is handed (an event source's `BatchSize`; SQS gives at most 10 a receive)."""

    def __init__(
        self,
        namespace: str,
        handlers: Mapping[str, str],
        env: Mapping[str, str] | None = None,
        *,
        functions: Mapping[str, Function] | None = None,
        actor_env: Mapping[str, Mapping[str, str]] | None = None,
        queues: Mapping[str, Mapping[str, str]] | None = None,
        batch_size: int = 10,
    ) -> None:
        self.namespace = namespace
        self.handlers = dict(handlers)
        self.env = dict(env or {})
        self.actor_env = {actor: dict(variables) for actor, variables in (actor_env or {}).items()}
        self.functions: dict[str, Function] = dict(functions or {})
        self.queues = {name: dict(attributes) for name, attributes in (queues or {}).items()}
        self.batch_size = batch_size
        self.deliveries: list[Delivery] = []
        self.sidecars: dict[str, Sidecar] = {}
        self.clock = QueueClock()
        self._mock = mock_aws()
        self._sqs: Any = None
        self._urls: dict[str, str] = {}

    def __enter__(self) -> InProcessMesh:
        self._mock.start()
        self.clock.__enter__()
        self._sqs = boto3.client("sqs", region_name=REGION)
        for actor in dict.fromkeys([*self.queues, *self.handlers, *self.functions, SINK, SUMP]):
            name = resource_name(self.namespace, actor)
            attributes = self.queues.get(actor, {})
            self._urls[actor] = self._sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        self.provision()
        for actor, handler in self.handlers.items():
            names = {NAMESPACE.name: self.namespace, ACTOR.name: actor, HANDLER.name: handler}
            variables = {**self.env, **self.actor_env.get(actor, {}), **names}
            self.functions.setdefault(actor, self.actor_function(actor, variables))
        return self

    def provision(self) -> None:
        """What the functions need besides their queues (tables, buckets), made once the queues are."""

    def actor_function(self, actor: str, variables: dict[str, str]) -> Function:
        """The actor's function: its own sidecar, built from its variables."""
        self.sidecars[actor] = Sidecar(SidecarConfig.from_env(variables))
        return self.sidecars[actor].handle

    def context(self, actor: str) -> LambdaContext:
        """The Lambda context each invocation of the actor's function gets."""
        return LambdaContext(resource_name(self.namespace, actor))

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.clock.__exit__()
        self._mock.stop()

    @property
    def hops(self) -> int:
        """Envelopes delivered to any function, redeliveries included."""
        return len(self.deliveries)

    def queue_url(self, actor: str) -> str:
        return self._urls[actor]

    def send(self, route: list[str], payload: Any, headers: dict[str, Any] | None = None) -> str:
        """Put a new envelope on the first actor's queue, as a producer would."""
        envelope_id = str(uuid.uuid4())
        body = new_envelope(envelope_id, route, payload, headers)
        self._sqs.send_message(QueueUrl=self._urls[route[0]], MessageBody=json.dumps(body))
        return envelope_id

    def run_until_idle(self, max_batches: int = 10_000) -> int:
        """Deliver batches to the functions until their queues hold nothing, moving the queues' clock
        past every delay and visibility timeout on the way; returns batches run."""
        batches = 0
        queue_names = [resource_name(self.namespace, actor) for actor in self.functions]
        while batches < max_batches:
            delivered = [self._deliver_one_batch(actor) for actor in self.functions]
            batches += sum(delivered)
            if not any(delivered) and not self.clock.advance_to_next(queue_names):
                return batches
        raise RuntimeError(f"mesh still busy after {max_batches} batches")

    def _deliver_one_batch(self, actor: str) -> bool:
        url = self._urls[actor]
        received = self._sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=self.batch_size, AttributeNames=["All"], MessageAttributeNames=["All"]
        )
        messages = received.get("Messages", [])
        if not messages:
            return False
        context = self.context(actor)
        error: BaseException | None = None
        try:
            left = invoke_with_batch(self.functions[actor], self._sqs, url, messages, context)
        except Exception as exc:
            if "RedrivePolicy" not in self.queues.get(actor, {}):
                raise  # it would come back for ever: no dead-letter queue ends it
            error, left = exc, frozenset(message["MessageId"] for message in messages)  # as on Lambda
        for message in messages:
            count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
            retried = message["MessageId"] in left
            self.deliveries.append(Delivery(actor, json.loads(message["Body"]), count, retried, error))
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
