"""DynamoDB batch calls finish or fail within a bound: what a throttled table leaves unprocessed is sent
again after jittered, growing, bounded waits, then raises naming the table and the count; and each
caller does what its docstring says with what remains (nothing lost silently, nothing looping)."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any, cast

import orjson
import pytest

from asya.dynamo import Backoff, BatchIncompleteError, batch_get, batch_write, to_item
from asya.envelope import Envelope
from asya.live import STATUS, EventLog, EventsNotAppendedError
from asya.reporting import StatusReporter
from asya.task_store import TaskStore
from asya.telemetry import Telemetry
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.stream import follow
from asya_gateway.task_error import TaskError
from asya_local.functions.stream_poller import checkpoint
from asya_local.testing.tables import EVENTS, SPARK_BATCHES, TASKS, create_spark_batches_table
from asya_spark.ledger import BatchLedger
from tests.support.mesh import envelope

FOREVER = 10**9


class Throttled:
    """A moto DynamoDB client whose first `times` batch calls do only `keep` items each and answer the
    rest as unprocessed, as a throttled table does. Records how many items each call carried."""

    def __init__(self, client: Any, keep: int, times: int = FOREVER) -> None:
        self.client = client
        self.keep = keep
        self.times = times
        self.calls: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def _throttled(self, size: int) -> bool:
        self.calls.append(size)
        self.times -= 1
        return self.times >= 0

    def batch_write_item(self, **call: Any) -> Any:
        ((table, requests),) = call["RequestItems"].items()
        if not self._throttled(len(requests)):
            return self.client.batch_write_item(**call)
        if requests[: self.keep]:
            self.client.batch_write_item(RequestItems={table: requests[: self.keep]})
        return {"UnprocessedItems": {table: requests[self.keep :]} if requests[self.keep :] else {}}

    def batch_get_item(self, **call: Any) -> Any:
        ((table, wanted),) = call["RequestItems"].items()
        if not self._throttled(len(wanted["Keys"])):
            return self.client.batch_get_item(**call)
        done, left = wanted["Keys"][: self.keep], wanted["Keys"][self.keep :]
        read = self.client.batch_get_item(RequestItems={table: {**wanted, "Keys": done}}) if done else {}
        return {
            "Responses": read.get("Responses", {table: []}),
            "UnprocessedKeys": {table: {**wanted, "Keys": left}} if left else {},
        }


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


class RecordingTelemetry(Telemetry):
    def __init__(self) -> None:
        super().__init__("unit", "a")
        self.failures: list[tuple[str, dict[str, Any]]] = []
        self.counted: list[tuple[str, str]] = []

    def count(self, name: str, dimension: str = "", value: str = "", amount: int = 1) -> None:
        self.counted.append((name, value))

    def log_failure(self, message: str, **fields: Any) -> None:
        self.failures.append((message, fields))


def highest(low: float, high: float) -> float:
    """A jitter that always waits the whole ceiling, to see the ceilings."""
    return high


def puts(count: int) -> list[dict[str, Any]]:
    return [{"PutRequest": {"Item": {"task_id": {"S": "t"}, "seq": {"S": f"{n:04d}"}}}} for n in range(count)]


def stored(client: Any) -> int:
    return int(client.scan(TableName=EVENTS, Select="COUNT")["Count"])


# -- the module -----------------------------------------------------------------------------------------


def test_unprocessed_writes_are_sent_again_alone_until_all_are_written(dynamodb: Any) -> None:
    throttled, sleeps = Throttled(dynamodb, keep=5, times=3), Sleeps()
    batch_write(cast(Any, throttled), EVENTS, puts(60), backoff=Backoff(sleep=sleeps))
    assert stored(dynamodb) == 60
    assert throttled.calls == [25, 20, 15, 10, 25, 10]  # chunks of 25; a retry carries only the leftovers
    assert len(sleeps.waits) == 3


def test_unread_keys_are_read_again_alone_and_missing_keys_are_simply_absent(dynamodb: Any) -> None:
    batch_write(dynamodb, EVENTS, puts(150))
    throttled = Throttled(dynamodb, keep=40, times=2)
    keys = [{"task_id": {"S": "t"}, "seq": {"S": f"{n:04d}"}} for n in range(250)]
    items = batch_get(cast(Any, throttled), EVENTS, keys, backoff=Backoff(sleep=Sleeps()), ConsistentRead=True)
    assert sorted(item["seq"]["S"] for item in items) == [f"{n:04d}" for n in range(150)]
    assert throttled.calls == [100, 60, 20, 100, 50]


def test_what_stays_unprocessed_raises_naming_the_table_and_how_many_remain(dynamodb: Any) -> None:
    throttled, sleeps = Throttled(dynamodb, keep=3), Sleeps()
    with pytest.raises(BatchIncompleteError, match=rf"table '{EVENTS}': 23 of 35 items still unprocessed") as raised:
        batch_write(cast(Any, throttled), EVENTS, puts(35), backoff=Backoff(sleep=sleeps))
    assert throttled.calls == [25, 22, 19, 16]  # four calls, then the second chunk is never sent
    assert len(raised.value.remaining) == 23
    assert stored(dynamodb) == 12
    assert len(sleeps.waits) == 3


def test_the_waits_grow_are_jittered_and_each_stays_under_its_ceiling(dynamodb: Any) -> None:
    ceilings: list[float] = []

    def jitter(low: float, high: float) -> float:
        ceilings.append(high)
        return random.Random(len(ceilings)).uniform(low, high)

    sleeps = Sleeps()
    backoff = Backoff(attempts=7, base=0.05, cap=0.3, budget=5.0, sleep=sleeps, jitter=jitter)
    with pytest.raises(BatchIncompleteError):
        batch_write(cast(Any, Throttled(dynamodb, keep=0)), EVENTS, puts(3), backoff=backoff)
    assert ceilings == pytest.approx([0.05, 0.1, 0.2, 0.3, 0.3, 0.3])  # doubling, then capped
    assert all(0 <= wait <= ceiling for wait, ceiling in zip(sleeps.waits, ceilings, strict=True))
    assert len(set(sleeps.waits)) == len(sleeps.waits)  # full jitter: random waits, not the ceilings


def test_the_waits_of_one_call_stay_within_its_budget_well_under_a_second_by_default(dynamodb: Any) -> None:
    sleeps = Sleeps()
    with pytest.raises(BatchIncompleteError, match="29 of 75"):  # chunk 1 got through; chunk 2 ran out of time
        batch_write(
            cast(Any, Throttled(dynamodb, keep=7)), EVENTS, puts(75), backoff=Backoff(sleep=sleeps, jitter=highest)
        )
    assert sleeps.waits == pytest.approx([0.05, 0.1, 0.2, 0.05, 0.1])
    assert sum(sleeps.waits) <= Backoff().budget == 0.5


def test_a_backoff_without_attempts_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one attempt"):
        Backoff(attempts=0)


# -- the callers ----------------------------------------------------------------------------------------


def fast(**fields: Any) -> Backoff:
    return Backoff(sleep=Sleeps(), **fields)


def test_the_preflight_goes_on_with_the_statuses_it_read_and_says_what_it_could_not(dynamodb: Any) -> None:
    ids = [f"t{n:02d}" for n in range(30)]
    batch_write(dynamodb, TASKS, [{"PutRequest": {"Item": to_item({"id": i, "status": "canceled"})}} for i in ids])
    throttled = Throttled(dynamodb, keep=5)
    store = TaskStore(TASKS, client=cast(Any, throttled), backoff=fast())
    reporter = StatusReporter(store, None, telemetry := RecordingTelemetry())
    branches = (envelope(id=f"{i}-b", headers={"x-asya-root-id": i}) for i in ids)  # the pre-flight reads roots
    statuses = reporter.preflight(orjson.dumps(branch).decode() for branch in branches)
    assert statuses == dict.fromkeys(ids[:20], "canceled")  # four calls of five keys: read, and used
    assert throttled.calls == [30, 25, 20, 15]  # bounded: no spinning
    ((message, fields),) = telemetry.failures
    assert message == "pre-flight check failed"
    assert "10 of 30 items still unprocessed" in fields["error"]


def test_a_listing_that_cannot_read_every_record_answers_503(dynamodb: Any) -> None:
    store = TaskStore(TASKS, client=dynamodb)
    for n in range(3):
        store.create({"id": f"t{n}", "created_at": f"2026-11-23T10:00:0{n}Z"})
    throttled = TaskStore(TASKS, client=cast(Any, Throttled(dynamodb, keep=1)), backoff=fast(attempts=2))
    with pytest.raises(BatchIncompleteError, match="1 of 3"):
        throttled.get_many(["t0", "t1", "t2"])
    service = TaskService(GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS), tasks=throttled)
    with pytest.raises(TaskError, match="ask for this page again") as refused:
        service.listing.page("pending", limit=10, cursor=None)
    assert refused.value.status == 503


def test_the_event_log_raises_with_the_events_it_could_not_append_instead_of_dropping_them(dynamodb: Any) -> None:
    log = EventLog(EVENTS, client=cast(Any, Throttled(dynamodb, keep=2)), backoff=fast())
    with pytest.raises(EventsNotAppendedError, match=f"table '{EVENTS}': 22 of 30") as raised:
        log.append(("t", STATUS, {"n": n}) for n in range(30))
    assert raised.value.missing == list(range(8, 30))
    assert stored(dynamodb) == 8


def test_a_fly_event_the_log_cannot_take_is_logged_and_the_hop_goes_on(dynamodb: Any) -> None:
    log = EventLog(EVENTS, client=cast(Any, Throttled(dynamodb, keep=0)), backoff=fast())
    reporter = StatusReporter(TaskStore(TASKS, client=dynamodb), log, telemetry := RecordingTelemetry())
    reporter.send_fly(Envelope.model_validate(envelope()), {"partial": "hel"})  # returns: the hop is not failed
    assert [message for message, _ in telemetry.failures] == ["fly event failed"]
    assert ("StatusErrors", "") in telemetry.counted


WATCHED_UNTIL = int(dt.datetime(2026, 11, 25, 10, 5, tzinfo=dt.UTC).timestamp())


def stream_records(count: int, watched: int | None = None) -> list[dict[str, Any]]:
    """`count` changes of as many tasks, the first `watched` of them (all by default) while watched."""
    watched = count if watched is None else watched
    return [
        {
            "eventName": "INSERT",
            "dynamodb": {
                "SequenceNumber": f"{100 + n}",
                "NewImage": to_item(
                    {
                        "id": f"t{n}",
                        "status": "succeeded" if n % 2 else "running",
                        "updated_at": "2026-11-25T10:00:00Z",
                        "watched_until": WATCHED_UNTIL if n < watched else 0,
                    }
                ),
            },
        }
        for n in range(count)
    ]


def test_the_stream_consumer_reports_the_first_record_whose_event_is_missing(dynamodb: Any) -> None:
    records, telemetry = stream_records(30), RecordingTelemetry()
    log = EventLog(EVENTS, client=cast(Any, Throttled(dynamodb, keep=3)), backoff=fast())
    failures = follow(records, log, telemetry)
    assert failures == [{"itemIdentifier": "112"}]  # 12 events landed (4 calls of 3)
    assert checkpoint({"batchItemFailures": failures}, records) == 12  # Lambda delivers again from there
    assert telemetry.failures[0][1]["sequence_number"] == "112"
    assert telemetry.counted.count(("TasksFinished", "succeeded")) == 6  # only the records that are done


def test_the_stream_consumer_answers_no_failures_when_every_event_is_logged(dynamodb: Any) -> None:
    telemetry = RecordingTelemetry()
    assert follow(stream_records(30), EventLog(EVENTS, client=dynamodb), telemetry) == []
    assert stored(dynamodb) == 30
    assert telemetry.failures == []


def test_the_stream_consumer_logs_only_changes_made_while_a_watcher_was_there(dynamodb: Any) -> None:
    telemetry = RecordingTelemetry()
    assert follow(stream_records(30, watched=10), EventLog(EVENTS, client=dynamodb), telemetry) == []
    assert stored(dynamodb) == 10
    assert telemetry.counted.count(("TasksFinished", "succeeded")) == 15  # counted, watched or not


def test_a_missing_event_of_a_watched_change_is_retried_from_its_own_record(dynamodb: Any) -> None:
    records = stream_records(30)
    for record in records[:5]:
        record["dynamodb"]["NewImage"]["watched_until"] = {"N": "0"}  # the first five: nobody watched
    log = EventLog(EVENTS, client=cast(Any, Throttled(dynamodb, keep=2)), backoff=fast())
    failures = follow(records, log, RecordingTelemetry())
    assert failures == [{"itemIdentifier": "113"}]  # t5..t12 landed (4 calls of 2): t13 is the first missing


def test_the_spark_ledger_raises_instead_of_spinning_on_a_throttled_table(dynamodb: Any) -> None:
    create_spark_batches_table(dynamodb)
    throttled = Throttled(dynamodb, keep=0)
    ledger = BatchLedger(SPARK_BATCHES, "unit", "a", client=cast(Any, throttled), backoff=fast())
    with pytest.raises(BatchIncompleteError, match=f"BatchWriteItem on table '{SPARK_BATCHES}': 30 of 30"):
        ledger.claim([f"hop#{n}" for n in range(30)], "b1")
    with pytest.raises(BatchIncompleteError, match=f"BatchGetItem on table '{SPARK_BATCHES}': 30 of 30"):
        ledger.claimed(f"hop#{n}" for n in range(30))
    assert throttled.calls == [25] * 4 + [30] * 4


def test_the_stream_consumer_counts_each_new_record_once_and_not_its_changes(dynamodb: Any) -> None:
    """`TasksCreated` comes from the stream, whoever made the record: the gateway's create, or the first
    hop's claim of a task sent straight to a queue."""
    records, telemetry = stream_records(4), RecordingTelemetry()
    changed = {**records[0], "eventName": "MODIFY"}
    changed["dynamodb"] = {
        **records[0]["dynamodb"],
        "SequenceNumber": "200",
        "OldImage": records[0]["dynamodb"]["NewImage"],
    }
    changed["dynamodb"]["NewImage"] = {**changed["dynamodb"]["NewImage"], "status": {"S": "failed"}}
    assert follow([*records, changed], EventLog(EVENTS, client=dynamodb), telemetry) == []
    assert telemetry.counted.count(("TasksCreated", "")) == 4
    assert telemetry.counted.count(("TasksFinished", "failed")) == 1
