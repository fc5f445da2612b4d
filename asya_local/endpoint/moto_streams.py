"""Make moto's DynamoDB streams readable by a poller: `apply_stream_fix()` patches moto 5.2.5 in place.

moto attaches every event source mapping on a table's stream to the table, and on each write it runs the
mapped function (in Docker) with the records held so far, whether or not the mapping is enabled. With no
Docker that fails after about 50 ms per write, and since the failure message is a non-empty result, moto
then empties the shard's records: a stream reader sees nothing, and the next records reuse old sequence
numbers. Items with a binary attribute fail the write outright (moto cannot JSON-encode the bytes for
the function). SQS mappings do not have this problem because moto skips disabled ones there; the patch
gives stream mappings the same rule, so the local stack disables them and polls the stream itself.

moto also keeps every shard iterator it ever handed out, and a poller gets a new one on every
`GetRecords` call (five a second when idle): the patch forgets the oldest beyond `MAX_ITERATORS`, as
AWS expires iterators after 15 minutes. Stream records themselves are kept for the life of the server
(AWS trims them after 24 hours).

Last, moto answers `GetRecords` through its generic, model-driven serializer, which walks every
attribute of every old and new image: about 2.5 ms of CPU per record, a quarter of the endpoint's
time in `bench/local_mesh`. The records are kept in their wire form already, so the patch writes the
answer with moto's own DynamoDB JSON encoder (times as epoch seconds, binary as base64, as the
serializer writes them).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.dynamodb.models.table import StreamRecord, StreamShard
from moto.dynamodb.models.utilities import dynamo_json_dump
from moto.dynamodbstreams.models import DynamoDBStreamsBackend
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

MAX_ITERATORS = 10_000
_ORIGINAL_GET_RECORDS = DynamoDBStreamsBackend.get_records
_iterators_lock = threading.Lock()


def _add(self: StreamShard, old: Any, new: Any) -> None:
    """moto's `StreamShard.add`, invoking only enabled mappings (and keeping the records if none ran)."""
    view_type = self.table.stream_specification["StreamViewType"]  # type: ignore[index]
    event_name = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
    sequence = len(self.items) + self.starting_sequence_number
    self.items.append(StreamRecord(self.table, view_type, event_name, old, new, sequence))
    result = None
    from moto.awslambda.utils import get_backend

    for arn, mapping in self.table.lambda_event_source_mappings.items():
        if not mapping.enabled:
            continue
        region = arn.split(":")[3]
        result = get_backend(self.account_id, region).send_dynamodb_items(arn, self.items, mapping.event_source_arn)
    if result:
        self.items = []


def _get_records(self: DynamoDBStreamsBackend, iterator_arn: str, limit: int) -> dict[str, Any]:
    result = _ORIGINAL_GET_RECORDS(self, iterator_arn, limit)
    iterators = self.shard_iterators
    if len(iterators) > MAX_ITERATORS:
        with _iterators_lock:  # `list()` copies atomically while other requests add iterators
            for arn in list(iterators)[: len(iterators) - MAX_ITERATORS * 9 // 10]:
                iterators.pop(arn, None)
    return result


def _get_records_answer(self: DynamoDBStreamsHandler) -> str:
    limit = self._get_param("Limit")
    records = self.backend.get_records(self._get_param("ShardIterator"), 1000 if limit is None else limit)
    return dynamo_json_dump(records)


def apply_stream_fix() -> None:
    """Patch moto's DynamoDB stream models in this process (idempotent)."""
    if getattr(StreamShard, "_asya_stream_fix", False):
        return
    setattr(StreamShard, "add", _add)  # noqa: B010 - mypy: no method-assign
    setattr(DynamoDBStreamsBackend, "get_records", _get_records)  # noqa: B010
    setattr(DynamoDBStreamsHandler, "get_records", _get_records_answer)  # noqa: B010
    setattr(StreamShard, "_asya_stream_fix", True)  # noqa: B010
