"""The sidecar as a long-running SQS consumer (`asya.consumer`), in moto's in-process SQS: a batch
it receives is routed as a Lambda actor routes it, settled as Lambda's event source settles it, and
its messages stay invisible while a hop outlives the queue's visibility timeout."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from asya.consumer.loop import Consumer
from asya.consumer.settings import ConsumerSettings
from asya.dedup import Hop, dynamodb_store
from asya.task_store import TaskStore
from asya_local.testing.tables import EVENTS, TASKS, create_idempotency_table, create_tables
from tests.support.consumers import in_progress_until
from tests.support.mesh import NS, Mesh, envelope


def queue_url(mesh: Mesh, actor: str = "a") -> str:
    return str(mesh.sqs.get_queue_url(QueueName=f"asya-{NS}-{actor}")["QueueUrl"])


def counts(mesh: Mesh, actor: str = "a") -> tuple[int, int]:
    """(visible, in flight) of the actor's queue."""
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    found = mesh.sqs.get_queue_attributes(QueueUrl=queue_url(mesh, actor), AttributeNames=names)["Attributes"]
    return int(found[names[0]]), int(found[names[1]])


@pytest.fixture
def consumer_of(mesh: Mesh) -> Iterator[Any]:
    made: list[Consumer] = []

    def make(handler: str, batch_size: int = 10, hop_time_limit: float = 60, **env: str) -> Consumer:
        sidecar = mesh.actor(handler, **env)
        settings = ConsumerSettings(queue_url=queue_url(mesh), batch_size=batch_size, hop_time_limit=hop_time_limit)
        made.append(Consumer(sidecar.handle, mesh.sqs, settings, f"asya-{NS}-a"))
        return made[-1]

    yield make
    for consumer in made:
        consumer.holding.stop()


def send(mesh: Mesh, *documents: dict[str, Any]) -> None:
    for document in documents:
        mesh.sqs.send_message(QueueUrl=queue_url(mesh), MessageBody=json.dumps(document))


def test_a_batch_that_succeeds_is_routed_and_deleted(mesh: Mesh, consumer_of: Any) -> None:
    consumer = consumer_of("enrich")
    send(mesh, *(envelope({"n": n}, id=f"env-{n}") for n in range(3)))

    assert consumer.poll_once(wait_seconds=0) == 3

    outputs = mesh.messages("b")
    assert sorted(out["payload"]["n"] for out in outputs) == [0, 1, 2]
    assert all(out["payload"]["seen"] and out["route"]["curr"] == "b" for out in outputs)
    assert counts(mesh) == (0, 0)  # deleted, not merely hidden


def test_a_failing_envelope_goes_where_it_goes_on_lambda(mesh: Mesh, consumer_of: Any) -> None:
    send(mesh, envelope({"n": 1}))
    consumer_of("explode").poll_once(wait_seconds=0)
    through_container = mesh.only("x-sink")
    mesh.deliver(envelope({"n": 1}))  # the same envelope through the Lambda entry point
    through_lambda = mesh.only("x-sink")

    assert counts(mesh) == (0, 0)
    assert mesh.messages("b") == []
    for key in ("route", "payload", "id"):
        assert through_container[key] == through_lambda[key]
    assert "bad input" in str(through_container)


def test_heartbeats_keep_a_long_hop_invisible_past_the_visibility_timeout(mesh: Mesh, consumer_of: Any) -> None:
    mesh.sqs.set_queue_attributes(QueueUrl=queue_url(mesh), Attributes={"VisibilityTimeout": "1"})
    consumer = consumer_of("slow")
    send(mesh, envelope({"sleep": 3.5}))
    hop = threading.Thread(target=consumer.poll_once, kwargs={"wait_seconds": 0})
    hop.start()
    while counts(mesh) != (0, 1):  # received: the hop is running
        time.sleep(0.05)
    seen_by_others: list[Any] = []
    while hop.is_alive():  # whatever the queue would hand a second consumer meanwhile
        seen_by_others += mesh.sqs.receive_message(QueueUrl=queue_url(mesh), WaitTimeSeconds=0).get("Messages", [])
        time.sleep(0.2)

    assert seen_by_others == []  # 3.5 s hop, 1 s visibility timeout: never delivered twice
    assert [out["payload"] for out in mesh.messages("b")] == [{"sleep": 3.5}]
    assert counts(mesh) == (0, 0)


def test_a_tracked_hops_claim_is_a_lease_the_heartbeat_renews_while_the_hop_runs(mesh: Mesh, consumer_of: Any) -> None:
    """Claimed for one visibility timeout (1 s), not the hop's 60 s limit, and held on past it by the
    heartbeats while the 3.5 s hop runs: a redelivery meanwhile finds it held."""
    create_tables(boto3.client("dynamodb"))
    tasks = TaskStore(TASKS)

    def held_until() -> float | None:
        task = tasks.get("env-1")
        return None if task is None or task.get("hop_held_until") is None else float(task["hop_held_until"])

    assert_held_as_a_lease(
        mesh, lambda: consumer_of("slow", ASYA_TASKS_TABLE=TASKS, ASYA_EVENTS_TABLE=EVENTS), held_until
    )


def test_an_untracked_hops_claim_in_the_idempotency_table_is_a_lease_too(mesh: Mesh, consumer_of: Any) -> None:
    """A mesh without a task table claims the hop in Powertools' record (`asya.hop_records`): the same
    lease, renewed by the same heartbeat, read back as Powertools reads it."""
    create_idempotency_table(boto3.client("dynamodb"), "asya-unit-hops")
    records = dynamodb_store("asya-unit-hops", 3600, NS)

    def held_until() -> float | None:
        return in_progress_until(records, Hop("a", "env-1", 0).key())

    assert_held_as_a_lease(mesh, lambda: consumer_of("slow", ASYA_IDEMPOTENCY_TABLE="asya-unit-hops"), held_until)


def test_a_message_returned_for_later_keeps_the_visibility_the_sidecar_gave_it(mesh: Mesh) -> None:
    """Another delivery holds the hop for 1.5 s more: the sidecar returns the message to come back when
    that claim lapses (3 s). A heartbeat that lands before the batch is over must not push it to the
    queue's 10 s visibility timeout: the consumer stops extending it first."""
    mesh.sqs.set_queue_attributes(QueueUrl=queue_url(mesh), Attributes={"VisibilityTimeout": "10"})
    create_idempotency_table(boto3.client("dynamodb"), "asya-unit-hops")
    dynamodb_store("asya-unit-hops", 3600, NS).claim(Hop("a", "env-1", 0).key(), 1_500)  # the other delivery's
    sidecar = mesh.actor("enrich", ASYA_IDEMPOTENCY_TABLE="asya-unit-hops")
    settings = ConsumerSettings(queue_url=queue_url(mesh), batch_size=1, hop_time_limit=60)

    def handle_then_beat(event: dict[str, Any], context: Any) -> dict[str, Any]:
        answer = sidecar.handle(event, context)
        consumer.holding.beat()  # a beat in the window before the consumer settles the batch
        return answer

    consumer = Consumer(handle_then_beat, mesh.sqs, settings, f"asya-{NS}-a")
    try:
        send(mesh, envelope({"n": 1}))
        assert consumer.poll_once(wait_seconds=0) == 1
        returned = time.monotonic()
        while counts(mesh) != (1, 0):
            assert time.monotonic() - returned < 6, (
                "held for the queue's visibility timeout, not until the claim lapsed"
            )
            time.sleep(0.1)
    finally:
        consumer.holding.stop()
    assert mesh.messages("b") == []  # not run: the other delivery had it


def assert_held_as_a_lease(
    mesh: Mesh, consumer_of: Callable[[], Consumer], held_until: Callable[[], float | None]
) -> None:
    """Run a 3.5 s hop on a queue whose visibility timeout is 1 s (read by the consumer when it starts),
    looking at its claim's expiry (`held_until`, epoch ms) meanwhile: never more than a lease ahead,
    never lapsed."""
    mesh.sqs.set_queue_attributes(QueueUrl=queue_url(mesh), Attributes={"VisibilityTimeout": "1"})
    consumer = consumer_of()
    send(mesh, envelope({"sleep": 3.5}))
    hop = threading.Thread(target=consumer.poll_once, kwargs={"wait_seconds": 0})
    hop.start()
    held: list[float] = []  # seconds the claim had left, each time it was looked at
    while hop.is_alive():
        until = held_until()
        if until is not None:
            held.append(until / 1000 - time.time())
        time.sleep(0.2)

    assert len(held) > 10
    assert all(0 < left <= 1.2 for left in held[:-1]), held  # a lease, renewed; never lapsed meanwhile
    assert [out["payload"] for out in mesh.messages("b")] == [{"sleep": 3.5}]


def test_the_configured_hop_time_limit_stops_a_handler_as_lambdas_timeout_does(mesh: Mesh, consumer_of: Any) -> None:
    """No Lambda context: the batch's clock (`ASYA_HOP_TIME_LIMIT_SECONDS`) is the time left, less the
    sidecar's margin, as a Lambda invocation's is."""
    consumer = consumer_of("slow", hop_time_limit=3, ASYA_LAMBDA_MARGIN_SECONDS="1")
    send(mesh, envelope({"sleep": 30}))
    started = time.monotonic()

    consumer.poll_once(wait_seconds=0)

    assert time.monotonic() - started < 3
    sump = mesh.only("x-sump")
    assert sump["status"]["reason"] == "HandlerTimeout"
    limit = re.search(r"within ([0-9.]+)s", sump["payload"]["details"]["message"])
    assert limit is not None
    assert 1.0 < float(limit.group(1)) <= 2.0, "the 3 s limit less the 1 s margin"
    assert counts(mesh) == (0, 0)


def test_a_receive_after_sigterm_releases_what_it_brought(mesh: Mesh, consumer_of: Any) -> None:
    consumer = consumer_of("enrich")
    send(mesh, envelope())
    consumer.stopping.set()  # SIGTERM arrived during the long poll

    assert consumer.poll_once(wait_seconds=0) == 1

    assert mesh.messages("b") == []
    assert counts(mesh) == (1, 0)  # visible again at once, for another task
