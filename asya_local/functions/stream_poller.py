"""One local execution environment behind a DynamoDB stream event source mapping, as its own process.

It does what Lambda's stream poller does for one function: find the stream's shards (and new ones as
they appear, children after their parents), read each from its start with `GetRecords` (or after its
checkpoint, when an earlier execution environment of the mapping left one), and invoke
the handler with batches of up to the mapping's batch size, in order. With `ReportBatchItemFailures`
the lowest failed sequence number in the response is the checkpoint: the records before it are done,
the batch is delivered again from it. A function error retries the whole batch (in halves, with
`BisectBatchOnFunctionError`). After the mapping's `MaximumRetryAttempts` (at most `MAX_RETRIES`
locally, where "until the record expires" would stall the shard for a day) the failed records are
skipped, as Lambda discards them: logged, and reported to the on-failure queue if there is one.

The mapping's position in each shard (the last sequence number whose batch is done: delivered, or
skipped) is kept in the spec's `checkpoint_file` after every batch, so a new execution environment
(after a crash, a timeout or a fault-injected restart) resumes after it, as Lambda's event source
mapping does, instead of delivering the whole stream again.

moto keeps a table's stream records in memory, in one shard, for the life of the server (see
`asya_local.endpoint.moto_streams` for what it needs to keep them).

    python -m asya_local.functions.stream_poller '<json spec>'
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from asya_local.functions import worker
from asya_local.functions.lambda_shapes import dynamodb_stream_event, stream_failure_record

POLL_SECONDS = 0.25  # Lambda polls each shard of a DynamoDB stream four times a second
SHARD_REFRESH_SECONDS = 5.0
MAX_RETRIES = 5
DEFAULT_RETRIES = 3  # when the mapping says -1 (retry until the record expires)
RETRY_DELAY_SECONDS = 0.2


@dataclass
class Shard:
    shard_id: str
    iterator: str | None  # None once a closed shard is read to its end
    pending: list[dict[str, Any]] = field(default_factory=list)  # read, not yet done
    position: str | None = None  # sequence number of the last record read
    attempts: int = 0  # deliveries of the batch at the head of `pending` that failed
    size: int = 0  # how many records the next delivery takes (below the batch size while bisecting)
    bisect_end: str | None = None  # the last record of the batch being bisected


class Checkpoints:
    """The last done sequence number of each shard, kept in a file that outlives this process. No file
    configured: nothing is kept, and every start reads the shards from their start."""

    def __init__(self, path: str | None, stream_arn: str) -> None:
        self.path = Path(path) if path else None
        self.stream_arn = stream_arn
        self.positions: dict[str, str] = self._load()

    def _load(self) -> dict[str, str]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            saved = json.loads(self.path.read_text())
            if saved["stream_arn"] != self.stream_arn:  # another stream's (a stack deployed again): not ours
                return {}
            return {str(shard): str(position) for shard, position in saved["shards"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            worker.say(f"checkpoint file {self.path} unreadable ({exc!r}): reading every shard from its start")
            return {}

    def get(self, shard_id: str) -> str | None:
        return self.positions.get(shard_id)

    def advance(self, shard_id: str, sequence_number: str) -> None:
        """Record a shard's position; the file is replaced whole, so a kill mid-write leaves the old one."""
        self.positions[shard_id] = sequence_number
        if self.path is not None:
            partial = self.path.with_name(self.path.name + ".partial")
            partial.write_text(json.dumps({"stream_arn": self.stream_arn, "shards": self.positions}))
            os.replace(partial, self.path)


def checkpoint(response: Any, batch: list[dict[str, Any]]) -> int | None:
    """Lambda's reading of a stream function's partial batch response: None if the batch is done,
    else the index of the first record to deliver again (the lowest failed sequence number). An empty
    or missing list is success; an identifier that is empty or not in the batch fails the whole batch."""
    if not response or not isinstance(response, dict) or not response.get("batchItemFailures"):
        return None
    positions = {record["dynamodb"]["SequenceNumber"]: index for index, record in enumerate(batch)}
    failed = []
    for item in response["batchItemFailures"]:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if identifier not in positions:
            return 0
        failed.append(positions[identifier])
    return min(failed)


class StreamPoller:
    def __init__(self, spec: dict[str, Any], handler: worker.Handler, streams: Any = None) -> None:
        import boto3

        self.spec = spec
        self.handler = handler
        self.streams = streams or boto3.client("dynamodbstreams")
        self.stream_arn: str = spec["stream_arn"]
        self.batch_size: int = spec["batch_size"]
        retries = spec["retry_attempts"] if spec["retry_attempts"] >= 0 else DEFAULT_RETRIES
        self.max_retries = min(retries, MAX_RETRIES)
        self.sqs: Any = boto3.client("sqs") if spec["on_failure_queue_url"] else None
        self.checkpoints = Checkpoints(spec.get("checkpoint_file"), self.stream_arn)
        self.shards: dict[str, Shard] = {}
        self.finished: set[str] = set()
        self._next_refresh = 0.0
        self._stopped = threading.Event()

    def stop(self) -> None:
        self._stopped.set()

    def run(self) -> None:
        """A pass every `POLL_SECONDS`, at once again while a shard has a backlog. Polling after every
        batch instead made the status stream read a few records at a time: about a third as many
        `GetRecords` calls as the mesh made hops, on the endpoint every hop waits for."""
        while not self._stopped.is_set():
            started = time.monotonic()
            if not self.poll_once():
                self._stopped.wait(POLL_SECONDS - (time.monotonic() - started))

    def poll_once(self) -> bool:
        """One pass over the shards; True if a shard gave a full batch (more may be waiting)."""
        if time.monotonic() >= self._next_refresh:
            self.refresh_shards()
            self._next_refresh = time.monotonic() + SHARD_REFRESH_SECONDS
        backlog = False
        for shard in list(self.shards.values()):
            backlog |= self._poll(shard)
        return backlog

    def refresh_shards(self) -> None:
        """Start reading shards not seen before, from their start or after their checkpoint; a child waits
        for its parent."""
        shards: list[dict[str, Any]] = []
        start: dict[str, str] = {}
        while True:
            described = self.streams.describe_stream(StreamArn=self.stream_arn, **start)["StreamDescription"]
            shards += described.get("Shards", [])
            if not described.get("LastEvaluatedShardId"):
                break
            start = {"ExclusiveStartShardId": described["LastEvaluatedShardId"]}
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id in self.shards or shard_id in self.finished or shard.get("ParentShardId") in self.shards:
                continue
            after = self.checkpoints.get(shard_id)
            kind = "AFTER_SEQUENCE_NUMBER" if after else "TRIM_HORIZON"
            self.shards[shard_id] = Shard(shard_id, self._iterator(shard_id, kind, after), position=after)

    def _iterator(self, shard_id: str, kind: str, after: str | None = None) -> str:
        position = {"SequenceNumber": after} if after else {}
        response = self.streams.get_shard_iterator(
            StreamArn=self.stream_arn, ShardId=shard_id, ShardIteratorType=kind, **position
        )
        return str(response["ShardIterator"])

    def _poll(self, shard: Shard) -> bool:
        """Deliver the shard's next batch, if any; True if it was full."""
        size = shard.size or self.batch_size
        if len(shard.pending) < size and shard.iterator is not None:
            self._read(shard, size - len(shard.pending))
        if not shard.pending:
            if shard.iterator is None:  # a closed shard, read to its end: its children may start
                del self.shards[shard.shard_id]
                self.finished.add(shard.shard_id)
            return False
        batch = shard.pending[:size]
        self._deliver(shard, batch)
        return len(batch) == size

    def _read(self, shard: Shard, limit: int) -> None:
        """Top up the records waiting for delivery (a retried batch takes newer records too)."""
        assert shard.iterator is not None
        try:
            response = self.streams.get_records(ShardIterator=shard.iterator, Limit=limit)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ExpiredIteratorException":
                raise
            after = shard.position
            shard.iterator = self._iterator(shard.shard_id, "AFTER_SEQUENCE_NUMBER" if after else "TRIM_HORIZON", after)
            return
        shard.iterator = response.get("NextShardIterator")
        records = response.get("Records", [])
        shard.pending += records
        if records:
            shard.position = records[-1]["dynamodb"]["SequenceNumber"]

    def _deliver(self, shard: Shard, batch: list[dict[str, Any]]) -> None:
        started = time.perf_counter()
        retry_from, raised = self._invoke(batch)
        elapsed = (time.perf_counter() - started) * 1000
        done = len(batch) if retry_from is None else retry_from
        shard.pending = shard.pending[done:]
        if done:
            self.checkpoints.advance(shard.shard_id, batch[done - 1]["dynamodb"]["SequenceNumber"])
        if retry_from is None:
            shard.attempts = 0
            if shard.bisect_end is None or _reached(batch[-1], shard.bisect_end):
                shard.size, shard.bisect_end = 0, None  # past the bisected batch: whole batches again
            worker.say(f"{len(batch)} in, {done} done ({elapsed:.0f} ms)")
            return
        shard.attempts = 1 if done else shard.attempts + 1  # a moved checkpoint starts a new count
        failed = batch[done:]
        if shard.attempts > self.max_retries:
            self._report(shard, failed)
            first, last = failed[0]["dynamodb"]["SequenceNumber"], failed[-1]["dynamodb"]["SequenceNumber"]
            worker.say(
                f"{len(batch)} in, {done} done, {len(failed)} skipped after {shard.attempts} attempts "
                f"(sequence numbers {first}..{last} of {shard.shard_id})"
            )
            shard.pending = shard.pending[len(failed) :]
            shard.attempts, shard.size, shard.bisect_end = 0, 0, None
            self.checkpoints.advance(shard.shard_id, last)
            return
        if raised and self.spec["bisect"]:
            shard.size = max(1, len(batch) // 2)
            shard.bisect_end = shard.bisect_end or batch[-1]["dynamodb"]["SequenceNumber"]
        worker.say(f"{len(batch)} in, {done} done, {len(failed)} delivered again ({elapsed:.0f} ms)")
        self._stopped.wait(RETRY_DELAY_SECONDS * shard.attempts)

    def _invoke(self, batch: list[dict[str, Any]]) -> tuple[int | None, bool]:
        """Where to deliver again from (None: done), and whether the function raised."""
        event = dynamodb_stream_event(self.stream_arn, batch)
        try:
            with worker.invocation(self.spec) as context:
                response = self.handler(event, context)
        except Exception:  # noqa: BLE001 - a function error: Lambda retries the whole batch
            traceback.print_exc(file=sys.stdout)
            return 0, True
        return (checkpoint(response, batch) if self.spec["report_failures"] else None), False

    def _report(self, shard: Shard, records: list[dict[str, Any]]) -> None:
        """Tell the on-failure destination (if any) where the skipped records are, as Lambda does."""
        if self.sqs is not None:
            record = stream_failure_record(
                self.spec["function"], self.stream_arn, shard.shard_id, records, shard.attempts
            )
            self.sqs.send_message(QueueUrl=self.spec["on_failure_queue_url"], MessageBody=json.dumps(record))


def _reached(record: dict[str, Any], sequence_number: str) -> bool:
    """Whether a record is at or after a sequence number (numeric strings of any length)."""
    return int(record["dynamodb"]["SequenceNumber"]) >= int(sequence_number)


def build(spec: dict[str, Any]) -> StreamPoller:
    _, handler = worker.handler_module(spec)
    return StreamPoller(spec, handler)


if __name__ == "__main__":
    worker.main(build)
