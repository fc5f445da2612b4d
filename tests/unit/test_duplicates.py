"""Duplicate deliveries of one hop must not send duplicates downstream (docs/faults.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest

import asya
from asya_local.functions.lambda_shapes import LambdaContext, sqs_record
from asya_local.testing.tables import create_idempotency_table
from tests.support import handlers
from tests.support.mesh import Mesh, envelope

TABLE = "asya-unit-idempotency"


@pytest.fixture
def table(mesh: Mesh) -> str:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_idempotency_table(dynamodb, TABLE)
    return TABLE


def test_same_envelope_twice_in_one_batch_is_sent_once(mesh: Mesh) -> None:
    handlers.CALLS.clear()
    mesh.actor("nothing")
    response = mesh.deliver(envelope(), envelope(), message_ids=["m1", "m2"])
    assert response == {"batchItemFailures": []}
    assert len(mesh.messages("x-sink")) == 1
    assert len(handlers.CALLS) == 1


def test_in_batch_duplicate_shares_the_fate_of_the_first(mesh: Mesh) -> None:
    from asya.sidecar import configure
    from asya.transport import MemoryTransport

    assert mesh.sidecar is None
    sidecar = mesh.actor("enrich")
    transport = MemoryTransport()
    transport.fail_entries = {"e0"}
    configure(sidecar.config, transport)
    response = mesh.deliver(envelope(), envelope(), message_ids=["m1", "m2"])
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}, {"itemIdentifier": "m2"}]}


def test_duplicate_across_invocations_is_dropped_with_an_idempotency_table(mesh: Mesh, table: str) -> None:
    handlers.CALLS.clear()
    mesh.actor("nothing", ASYA_IDEMPOTENCY_TABLE=table)
    assert mesh.deliver(envelope()) == {"batchItemFailures": []}
    assert mesh.deliver(envelope()) == {"batchItemFailures": []}
    assert len(mesh.messages("x-sink")) == 1
    assert len(handlers.CALLS) == 1


def test_a_retry_attempt_is_not_a_duplicate(mesh: Mesh, table: str) -> None:
    policy = json.dumps({"policies": {"default": {"max_attempts": 2, "initial_delay": 0}}})
    mesh.actor("explode", ASYA_IDEMPOTENCY_TABLE=table, ASYA_RESILIENCY=policy)
    mesh.deliver(envelope())
    retry = mesh.only("a")
    mesh.deliver(retry)
    assert mesh.only("x-sink")["status"]["reason"] == "PolicyExhausted"


def test_failed_send_frees_the_hop_for_the_redelivery(mesh: Mesh, table: str) -> None:
    from asya.sidecar import configure
    from asya.transport import SqsTransport

    sidecar = mesh.actor("enrich", ASYA_IDEMPOTENCY_TABLE=table)
    broken = SqsTransport()
    broken.send = lambda _queue, messages: {m.entry_id for m in messages}  # type: ignore[method-assign, assignment]
    configure(sidecar.config, broken)
    assert mesh.deliver(envelope(), message_ids=["m1"]) == {"batchItemFailures": [{"itemIdentifier": "m1"}]}

    configure(sidecar.config)
    assert mesh.deliver(envelope(), message_ids=["m1"]) == {"batchItemFailures": []}
    assert len(mesh.messages("b")) == 1


def test_hop_in_progress_elsewhere_is_left_for_redelivery(mesh: Mesh, table: str) -> None:
    from asya.dedup import Hop

    sidecar = mesh.actor("enrich", ASYA_IDEMPOTENCY_TABLE=table)
    assert sidecar.ledger.store is not None
    sidecar.ledger.store.save_inprogress(data=Hop("a", "env-1", 0, 1).key(), remaining_time_in_millis=60_000)
    assert mesh.deliver(envelope(), message_ids=["m1"]) == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    mesh.assert_empty("b")


def test_hop_in_progress_elsewhere_comes_back_when_that_claim_lapses(mesh: Mesh, table: str) -> None:
    """Not after the queue's whole visibility timeout: the record is made visible a second after the
    other delivery's claim expires, when that delivery has ended one way or the other."""
    from asya.dedup import Hop
    from asya.sidecar import configure
    from asya.transport import MemoryTransport

    sidecar = mesh.actor("enrich", ASYA_IDEMPOTENCY_TABLE=table)
    transport = MemoryTransport()
    sidecar = configure(sidecar.config, transport)
    assert sidecar.ledger.store is not None
    sidecar.ledger.store.save_inprogress(data=Hop("a", "env-1", 0, 1).key(), remaining_time_in_millis=20_000)
    assert mesh.deliver(envelope(), envelope(id="env-2"), message_ids=["m1", "m2"]) == {
        "batchItemFailures": [{"itemIdentifier": "m1"}]
    }
    [(_, seconds)] = transport.returned["asya-unit-a"]  # m1 only: m2 ran
    assert 19 <= seconds <= 22


def test_fan_out_children_get_the_same_ids_when_a_hop_runs_again(mesh: Mesh) -> None:
    mesh.actor("fan_out")
    mesh.deliver(envelope(payload={"items": [1, 2, 3]}))
    first: list[Any] = sorted(e["id"] for e in mesh.messages("b"))
    mesh.actor("fan_out")
    mesh.deliver(envelope(payload={"items": [1, 2, 3]}))
    assert sorted(e["id"] for e in mesh.messages("b")) == first


def test_hop_records_carry_the_namespace_prefix_that_iam_scopes(mesh: Mesh, table: str) -> None:
    mesh.actor("nothing", ASYA_IDEMPOTENCY_TABLE=table)
    mesh.deliver(envelope())
    items = boto3.client("dynamodb", region_name="us-east-1").scan(TableName=table)["Items"]
    assert len(items) == 1
    assert items[0]["id"]["S"].startswith("asya-unit#")
    assert items[0]["status"]["S"] == "COMPLETED"


class StoppedContext(LambdaContext):
    """An invocation whose execution environment was stopped while its records ran (SIGSTOP, a host
    pause) and resumed after the invocation's time had run out: the first reading of the remaining
    time is `first_ms`, every later one 0. `meanwhile` runs at the first late reading: what another
    delivery of the same message did while this one was stopped."""

    def __init__(self, first_ms: int, meanwhile: Callable[[], None] = lambda: None) -> None:
        super().__init__("asya-unit-a", timeout_seconds=first_ms / 1000)
        self.readings = 0
        self.first_ms = first_ms
        self.meanwhile = meanwhile

    def get_remaining_time_in_millis(self) -> int:
        self.readings += 1
        if self.readings == 1:
            return self.first_ms
        if self.readings == 2:
            self.meanwhile()
        return 0


def deliver_in(context: LambdaContext, *bodies: dict[str, Any], message_ids: list[str]) -> dict[str, Any]:
    records = [sqs_record("asya-unit-a", json.dumps(body), mid) for body, mid in zip(bodies, message_ids, strict=True)]
    return asya.lambda_handler({"Records": records}, context)


def test_records_whose_invocation_ran_out_are_neither_sent_nor_settled(mesh: Mesh) -> None:
    mesh.actor("enrich")
    response = deliver_in(StoppedContext(60_000), envelope(), message_ids=["m1"])
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    mesh.assert_empty("b", "x-sink", "x-sump")


def test_a_stopped_delivery_does_not_sump_a_hop_another_delivery_completed(mesh: Mesh, table: str) -> None:
    """The handler's alarm goes off after the environment resumes, past the invocation's end; by then
    the hop's claim had expired and a redelivery completed it. Routing it to x-sump as a timeout
    would give the envelope a second, conflicting final outcome (and an x-sump alarm)."""
    from asya.dedup import Hop

    sidecar = mesh.actor("slow", ASYA_IDEMPOTENCY_TABLE=table)
    store = sidecar.ledger.store
    assert store is not None
    key = Hop("a", "env-1", 0, 1).key()

    def completed_elsewhere() -> None:
        store.delete_record(data=key, exception=RuntimeError("claim expired"))
        store.save_inprogress(data=key, remaining_time_in_millis=60_000)
        store.save_success(data=key, result={})

    context = StoppedContext(2_300, completed_elsewhere)  # 0.3 s for the handler after the 2 s margin
    response = deliver_in(context, envelope(payload={"sleep": 0.5}), message_ids=["m1"])
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    mesh.assert_empty("b", "x-sink", "x-sump")
    record = store.get_record(data=key)
    assert record is not None
    assert record.status == "COMPLETED"
    assert mesh.deliver(envelope(payload={"sleep": 0.5}), message_ids=["m1"]) == {"batchItemFailures": []}
    mesh.assert_empty("b", "x-sink", "x-sump")
