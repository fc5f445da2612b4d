"""The local DynamoDB stream event source: the event shape, batches in order, partial batch failures
re-delivered from the checkpoint, give-up with an on-failure record, bisecting, new shards, a restarted
poller resuming after each shard's kept checkpoint; and the moto fix that keeps a table's stream
records readable while a (disabled) mapping is attached."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from asya_local.functions import stream_poller
from asya_local.functions.lambda_shapes import REGION, dynamodb_stream_event
from asya_local.functions.stream_poller import StreamPoller, checkpoint
from asya_local.roles import local_client
from asya_local.testing.moto_server import create_id_table, reset

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/label"


def record(sequence: int, **image: Any) -> dict[str, Any]:
    return {
        "eventID": f"e{sequence}",
        "eventName": "MODIFY",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": REGION,
        "dynamodb": {
            "ApproximateCreationDateTime": datetime(2026, 1, 1, tzinfo=UTC),
            "Keys": {"id": {"S": f"t{sequence}"}},
            "NewImage": {"id": {"S": f"t{sequence}"}, **image},
            "SequenceNumber": str(sequence),
            "SizeBytes": 10,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }


class FakeStreams:
    """`dynamodbstreams` over in-memory shards: `shards[id] = (parent id, records, closed)`."""

    def __init__(self) -> None:
        self.shards: dict[str, tuple[str | None, list[dict[str, Any]], bool]] = {}

    def describe_stream(self, StreamArn: str) -> dict[str, Any]:  # noqa: N803 - boto3's names
        shards = [
            {"ShardId": shard_id, **({"ParentShardId": p} if p else {})} for shard_id, (p, _, _) in self.shards.items()
        ]
        return {"StreamDescription": {"StreamArn": StreamArn, "Shards": shards}}

    def get_shard_iterator(
        self,
        StreamArn: str,  # noqa: N803 - boto3's names
        ShardId: str,  # noqa: N803
        ShardIteratorType: str,  # noqa: N803
        SequenceNumber: str | None = None,  # noqa: N803
    ) -> dict[str, Any]:
        if ShardIteratorType == "TRIM_HORIZON":
            return {"ShardIterator": f"{ShardId}|0"}
        assert ShardIteratorType == "AFTER_SEQUENCE_NUMBER"
        _, records, _ = self.shards[ShardId]
        after = [r["dynamodb"]["SequenceNumber"] for r in records].index(SequenceNumber) + 1
        return {"ShardIterator": f"{ShardId}|{after}"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:  # noqa: N803
        shard_id, position = ShardIterator.split("|")
        _, records, closed = self.shards[shard_id]
        start = int(position)
        taken = records[start : start + Limit]
        end = start + len(taken)
        done = closed and end == len(records)
        return {"Records": taken, **({} if done else {"NextShardIterator": f"{shard_id}|{end}"})}


class FakeQueue:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_message(self, QueueUrl: str, MessageBody: str) -> None:  # noqa: N803
        self.sent.append(json.loads(MessageBody))


class Function:
    """Records what it was given; fails the records named in `fail` (by sequence number) `times` times."""

    def __init__(self, fail: tuple[str, ...] = (), times: int = 1, raises: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.fail, self.times, self.raises = set(fail), times, raises

    def __call__(self, event: dict[str, Any], _context: Any) -> dict[str, Any]:
        sequences = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
        self.batches.append(sequences)
        failed = [s for s in sequences if s in self.fail]
        if failed and self.times > 0:
            self.times -= 1
            if self.raises:
                raise RuntimeError("function error")
            return {"batchItemFailures": [{"itemIdentifier": s} for s in failed]}
        return {"batchItemFailures": []}


def poller(function: Function, streams: FakeStreams, **spec: Any) -> StreamPoller:
    settings = {
        "function": "asya-t-gateway-stream",
        "timeout": 60.0,
        "memory": 256,
        "stream_arn": ARN,
        "batch_size": 3,
        "retry_attempts": 2,
        "report_failures": True,
        "bisect": False,
        "on_failure_queue_url": None,
        **spec,
    }
    return StreamPoller(settings, function, streams)


@pytest.fixture(autouse=True)
def no_retry_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_poller, "RETRY_DELAY_SECONDS", 0.0)


def drain(made: StreamPoller, passes: int = 20) -> None:
    for _ in range(passes):
        made.poll_once()


def test_the_event_carries_json_as_lambda_sends_it() -> None:
    event = dynamodb_stream_event(ARN, [record(1, blob={"B": b"\x00\x01"})])
    (delivered,) = event["Records"]
    assert delivered["eventSourceARN"] == ARN
    assert delivered["eventSource"] == "aws:dynamodb"
    assert delivered["awsRegion"] == REGION
    assert delivered["dynamodb"]["ApproximateCreationDateTime"] == 1767225600
    assert base64.b64decode(delivered["dynamodb"]["NewImage"]["blob"]["B"]) == b"\x00\x01"
    assert json.loads(json.dumps(event)) == event


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (None, None),
        ({}, None),
        ({"batchItemFailures": []}, None),
        ({"batchItemFailures": [{"itemIdentifier": "3"}, {"itemIdentifier": "2"}]}, 1),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, 0),
        ({"batchItemFailures": [{"itemIdentifier": "99"}]}, 0),
        ({"batchItemFailures": [{"wrong": "2"}]}, 0),
    ],
)
def test_the_checkpoint_is_the_lowest_failed_record(response: Any, expected: int | None) -> None:
    assert checkpoint(response, [record(1), record(2), record(3)]) == expected


def test_records_arrive_in_order_in_batches_of_the_batch_size() -> None:
    streams, function = FakeStreams(), Function()
    streams.shards["s1"] = (None, [record(n) for n in range(1, 8)], False)
    drain(poller(function, streams))
    assert function.batches == [["1", "2", "3"], ["4", "5", "6"], ["7"]]


def test_a_partial_failure_is_delivered_again_from_the_first_failed_record() -> None:
    streams, function = FakeStreams(), Function(fail=("2",))
    streams.shards["s1"] = (None, [record(n) for n in range(1, 5)], False)
    drain(poller(function, streams))
    assert function.batches == [["1", "2", "3"], ["2", "3", "4"]]


def test_records_that_keep_failing_are_skipped_and_reported() -> None:
    streams, function, queue = FakeStreams(), Function(fail=("2",), times=99), FakeQueue()
    streams.shards["s1"] = (None, [record(n) for n in range(1, 5)], False)
    made = poller(function, streams, on_failure_queue_url="http://local/q")
    made.sqs = queue
    drain(made)
    assert function.batches == [["1", "2", "3"], ["2", "3", "4"], ["2", "3", "4"]], "delivered, then retried twice"
    (report,) = queue.sent
    assert report["DDBStreamBatchInfo"]["startSequenceNumber"] == "2"
    assert report["DDBStreamBatchInfo"]["endSequenceNumber"] == "4"
    assert report["DDBStreamBatchInfo"]["streamArn"] == ARN
    assert report["requestContext"]["condition"] == "RetryAttemptsExhausted"


def test_a_function_error_is_retried_in_halves_when_bisecting() -> None:
    streams, function = FakeStreams(), Function(fail=("4",), times=2, raises=True)
    streams.shards["s1"] = (None, [record(n) for n in range(1, 7)], False)
    drain(poller(function, streams, batch_size=4, bisect=True, retry_attempts=5))
    assert function.batches == [["1", "2", "3", "4"], ["1", "2"], ["3", "4"], ["3"], ["4"], ["5", "6"]]


def test_a_child_shard_is_read_after_its_parent() -> None:
    streams, function = FakeStreams(), Function()
    streams.shards["parent"] = (None, [record(1), record(2)], True)
    streams.shards["child"] = ("parent", [record(3)], False)
    made = poller(function, streams)
    drain(made, passes=3)
    made.refresh_shards()
    drain(made, passes=3)
    assert function.batches == [["1", "2"], ["3"]]
    assert made.finished == {"parent"}


def test_a_restarted_poller_resumes_after_each_shards_checkpoint(tmp_path: Path) -> None:
    streams, first = FakeStreams(), Function()
    streams.shards["s1"] = (None, [record(n) for n in range(1, 5)], False)
    streams.shards["s2"] = (None, [record(n) for n in range(11, 13)], False)
    checkpoints = str(tmp_path / "stream.checkpoint.json")
    drain(poller(first, streams, checkpoint_file=checkpoints))
    assert first.batches == [["1", "2", "3"], ["11", "12"], ["4"]]

    streams.shards["s1"][1].extend([record(5), record(6)])  # written while no poller ran
    again = Function()
    drain(poller(again, streams, checkpoint_file=checkpoints))  # a new execution environment
    assert again.batches == [["5", "6"]], "nothing delivered twice, nothing written meanwhile missed"


def test_a_restart_delivers_again_from_the_first_record_not_done(tmp_path: Path) -> None:
    streams, failing = FakeStreams(), Function(fail=("2",), times=99)
    streams.shards["s1"] = (None, [record(n) for n in range(1, 4)], False)
    checkpoints = str(tmp_path / "stream.checkpoint.json")
    poller(failing, streams, checkpoint_file=checkpoints).poll_once()  # "1" done, "2" failed: then killed
    fixed = Function()
    drain(poller(fixed, streams, checkpoint_file=checkpoints))
    assert fixed.batches == [["2", "3"]]


def test_records_given_up_on_are_not_delivered_again_after_a_restart(tmp_path: Path) -> None:
    streams, failing = FakeStreams(), Function(fail=("2",), times=99)
    streams.shards["s1"] = (None, [record(n) for n in range(1, 4)], False)
    checkpoints = str(tmp_path / "stream.checkpoint.json")
    drain(poller(failing, streams, checkpoint_file=checkpoints))
    streams.shards["s1"][1].append(record(4))
    after = Function()
    drain(poller(after, streams, checkpoint_file=checkpoints))
    assert after.batches == [["4"]]


@pytest.mark.parametrize(
    "saved",
    [
        json.dumps({"stream_arn": ARN.replace("label", "older"), "shards": {"s1": "2"}}),
        "{not json",
        json.dumps(["s1", "2"]),
    ],
    ids=["another stream's", "torn", "not an object"],
)
def test_a_checkpoint_file_not_for_this_stream_is_not_followed(tmp_path: Path, saved: str) -> None:
    streams, function = FakeStreams(), Function()
    streams.shards["s1"] = (None, [record(n) for n in range(1, 4)], False)
    checkpoints = tmp_path / "stream.checkpoint.json"
    checkpoints.write_text(saved)
    drain(poller(function, streams, checkpoint_file=str(checkpoints)))
    assert function.batches == [["1", "2", "3"]]


def test_moto_keeps_stream_records_with_a_disabled_mapping_attached(patched_endpoint: str) -> None:
    """Without `apply_stream_fix`, moto would run the mapped function on each write and then drop the
    records it holds; a binary attribute would fail the write. (The endpoint's process, which applies
    it, over HTTP: moto's in-process mode does not route DynamoDB Streams calls.)"""
    reset(patched_endpoint)
    dynamodb = local_client("dynamodb", patched_endpoint)
    table = create_id_table(dynamodb, "tasks", stream=True)
    role = local_client("iam", patched_endpoint).create_role(RoleName="r", AssumeRolePolicyDocument="{}")
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("h.py", "def handler(event, context):\n    return {}\n")
    lambda_client = local_client("lambda", patched_endpoint)
    lambda_client.create_function(
        FunctionName="consumer",
        Runtime="python3.12",
        Role=role["Role"]["Arn"],
        Handler="h.handler",
        Code={"ZipFile": code.getvalue()},
    )
    stream_arn = table["LatestStreamArn"]
    mapping = lambda_client.create_event_source_mapping(
        EventSourceArn=stream_arn, FunctionName="consumer", StartingPosition="TRIM_HORIZON"
    )
    lambda_client.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    for n in range(3):
        dynamodb.put_item(TableName="tasks", Item={"id": {"S": f"t{n}"}, "blob": {"B": b"\x00"}})

    function = Function()
    made = poller(function, FakeStreams(), stream_arn=stream_arn)
    made.streams = local_client("dynamodbstreams", patched_endpoint)
    drain(made, passes=3)
    (batch,) = function.batches
    assert len(set(batch)) == 3, "three records, sequence numbers not reused"
