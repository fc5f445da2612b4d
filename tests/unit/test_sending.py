"""Grouped sending: SendMessageBatch by destination, chunking, cached queue URLs, entry retries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

import asya
from asya.config import SidecarConfig
from asya.sidecar import configure
from asya.transport import MemoryTransport, OutgoingMessage, SqsTransport
from asya_local.functions.lambda_shapes import LambdaContext, sqs_record
from tests.support.mesh import NS, Mesh, envelope


class CountingClient:
    """Wraps the boto3 SQS client to count and inspect API calls."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def get_queue_url(self, **kwargs: Any) -> Any:
        self.calls.append(("get_queue_url", kwargs))
        return self.client.get_queue_url(**kwargs)

    def send_message_batch(self, **kwargs: Any) -> Any:
        self.calls.append(("send_message_batch", kwargs))
        return self.client.send_message_batch(**kwargs)

    def count(self, name: str) -> int:
        return sum(1 for call, _ in self.calls if call == name)


def _actor(handler: str, transport: Any) -> None:
    variables = {"ASYA_NAMESPACE": NS, "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": f"tests.support.handlers.{handler}"}
    configure(SidecarConfig.from_env(variables), transport)


def _deliver(*bodies: dict[str, Any], ids: Sequence[str] | None = None) -> dict[str, Any]:
    records = [sqs_record(f"asya-{NS}-a", json.dumps(b), ids[i] if ids else None) for i, b in enumerate(bodies)]
    return asya.lambda_handler({"Records": records}, LambdaContext("a"))


def test_outputs_are_grouped_by_queue_chunked_by_ten_and_urls_cached(mesh: Mesh) -> None:
    client = CountingClient(mesh.sqs)
    _actor("fan_out", SqsTransport(client))  # type: ignore[arg-type]
    _deliver(envelope(payload={"items": list(range(25))}), envelope(id="e2", payload={"items": [1]}, next=()))
    assert client.count("send_message_batch") == 5, "24 branches to b in 3 chunks and 1 to x-sink, then the root's own"
    assert all(len(kwargs["Entries"]) <= 10 for _, kwargs in client.calls if "Entries" in kwargs)
    assert client.count("get_queue_url") == 2

    _deliver(envelope(id="e3", payload={"items": [1]}))
    assert client.count("get_queue_url") == 2, "queue URLs are resolved once"
    assert len(mesh.messages("b")) == 26
    assert len(mesh.messages("x-sink")) == 1


def test_chunks_stay_under_the_batch_byte_limit(mesh: Mesh) -> None:
    client = CountingClient(mesh.sqs)
    _actor("fan_out", SqsTransport(client))  # type: ignore[arg-type]
    _deliver(envelope(payload={"items": ["z" * 400_000] * 5}))
    sizes = [sum(len(e["MessageBody"]) for e in kwargs["Entries"]) for _, kwargs in client.calls if "Entries" in kwargs]
    assert len(sizes) == 3
    assert all(size <= 1_048_576 for size in sizes)
    assert len(mesh.messages("b")) == 5


class FlakyTransport(MemoryTransport):
    """Fails each named entry the first `failures` times it is sent."""

    def __init__(self, failures: dict[str, int]) -> None:
        super().__init__()
        self.failures = failures
        self.attempts = 0

    def send(self, queue: str, messages: Sequence[OutgoingMessage]) -> set[str]:
        self.attempts += 1
        self.fail_entries = {m.entry_id for m in messages if self.failures.get(m.entry_id, 0) > 0}
        for entry_id in self.fail_entries:
            self.failures[entry_id] -= 1
        return super().send(queue, messages)


def test_a_failed_entry_is_retried() -> None:
    transport = FlakyTransport({"e1": 2})
    _actor("fan_out", transport)
    response = _deliver(envelope(payload={"items": [1, 2, 3]}))
    assert response == {"batchItemFailures": []}
    assert transport.attempts == 4, "the branches, e1 three times, then the root's own once they went"
    assert sorted(json.loads(m.body)["payload"]["item"] for m in transport.queues["asya-unit-b"]) == [1, 2, 3]


def test_an_entry_that_keeps_failing_reports_only_its_record() -> None:
    transport = FlakyTransport({"e1": 99})
    _actor("enrich", transport)
    response = _deliver(envelope(id="ok-1"), envelope(id="stuck"), envelope(id="ok-2"), ids=["m0", "m1", "m2"])
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert sorted(json.loads(m.body)["id"] for m in transport.queues["asya-unit-b"]) == ["ok-1", "ok-2"]


def test_an_output_for_an_actor_without_a_queue_goes_to_x_sump_at_once(mesh: Mesh) -> None:
    configure(
        SidecarConfig.from_env(
            {"ASYA_NAMESPACE": NS, "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "tests.support.handlers.enrich"}
        )
    )
    response = _deliver(envelope(id="astray", next=("no-such-actor",)), envelope(id="fine"), ids=["m0", "m1"])
    assert response == {"batchItemFailures": []}, "never redelivered: no later delivery could send it either"
    assert [e["id"] for e in mesh.messages("b")] == ["fine"]
    [sumped] = mesh.messages("x-sump")
    assert (sumped["id"], sumped["status"]["reason"]) == ("astray", "UnknownActor")
    assert f"asya-{NS}-no-such-actor" in sumped["status"]["error"]["message"]


@pytest.mark.parametrize("handler", ["enrich", "fan_out"])
def test_memory_transport_collects_per_queue(handler: str) -> None:
    transport = MemoryTransport()
    _actor(handler, transport)
    _deliver(envelope(payload={"items": [1], "x": 1}))
    assert list(transport.queues) == ["asya-unit-b"]
