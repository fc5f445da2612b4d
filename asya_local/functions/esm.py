"""One local execution environment behind an SQS event source mapping, run as its own process.

It does what Lambda's poller and runtime do for one function: long-poll the queue, gather a batch
(up to the batch size, within the batching window), invoke the function's real handler with the
SQS-shaped event and a Lambda-like context in the main thread, and delete exactly the messages the
partial batch response does not list. A crash or a malformed response deletes nothing, so the
messages come back after the visibility timeout and SQS redrives them once `maxReceiveCount` is
passed, just as on AWS.

    python -m asya_local.functions.esm '<json spec>'
"""

from __future__ import annotations

import math
import sys
import time
import traceback
from typing import Any

from asya_local.functions import worker
from asya_local.functions.lambda_shapes import invoke_with_batch

RECEIVE_WAIT_SECONDS = 20  # Lambda's pollers long-poll for 20 s
REDELIVERED = "redelivered message"  # starts the line naming a message received more than once


class _Stopped(BaseException):
    """SIGTERM during a long poll: the wait is cut short. A batch it may just have received stays
    in flight and returns to the queue after its visibility timeout, as on Lambda."""


class Poller:
    receiving = False  # in a long poll, which SIGTERM may end at once

    def __init__(self, spec: dict[str, Any]) -> None:
        import boto3

        self.spec = spec
        self.sqs = boto3.client("sqs")
        self.queue_url: str = spec["queue_url"]
        self.stopping = False
        self.init_failure: worker.InitError | None = None
        started = time.monotonic()
        try:
            _, self.handler = worker.handler_module(spec)
        except worker.InitError as failed:
            worker.report_init_error(failed.record, started)
            self.init_failure = failed

    def stop(self) -> None:
        self.stopping = True
        if self.receiving:
            raise _Stopped

    def run(self) -> None:
        """Idle, a poller waits in long polls of `RECEIVE_WAIT_SECONDS`: an idle mesh's pollers ask
        the endpoint once every 20 s each, not once a second (a sixth of the requests a busy local
        mesh made were idle pollers' receives), and a stop does not wait for the poll to end."""
        try:
            while not self.stopping:
                messages = self._gather()
                for message in messages:
                    receives = message.get("Attributes", {}).get("ApproximateReceiveCount", "1")
                    if receives != "1":
                        worker.say(f"{REDELIVERED} {message['MessageId']} (receive {receives})")
                if messages and self.init_failure is not None:
                    self._fail_uninitialized(messages, self.init_failure)
                if messages:
                    self._invoke(messages)
        except _Stopped:
            return

    def _fail_uninitialized(self, messages: list[dict[str, Any]], failed: worker.InitError) -> None:
        """An environment whose init failed fails the invocation it was started for, deleting nothing,
        and ends: the batch returns after the visibility timeout, counts as a receive, and is redriven
        after `maxReceiveCount`, as on Lambda; the next batch gets a new environment."""
        worker.say(
            f"function error, {len(messages)} message(s) return after the visibility timeout "
            f"(init failed: {failed.record['errorType']})"
        )
        raise SystemExit(1)

    def _gather(self) -> list[dict[str, Any]]:
        """A batch as Lambda's poller makes one: wait for a first message, then keep receiving until
        the batch is full or the batching window, counted from that first message, has passed. With
        no window the first receive is the batch. (Stopping at the first empty receive instead made a
        Spark actor start a job per trickle of envelopes, many more than its window implies.)"""
        batch_size, window = self.spec["batch_size"], self.spec["batching_window"]
        messages: list[dict[str, Any]] = []
        deadline = 0.0
        while not self.stopping and len(messages) < batch_size:
            wait = float(RECEIVE_WAIT_SECONDS)
            if messages:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    break
            self.receiving = not messages  # a batch being gathered is invoked, not dropped, on a stop
            try:
                received: list[Any] = self.sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=min(10, batch_size - len(messages)),
                    WaitTimeSeconds=math.ceil(wait),
                    AttributeNames=["All"],
                    MessageAttributeNames=["All"],
                ).get("Messages", [])
            finally:
                self.receiving = False
            if received and not messages:
                deadline = time.monotonic() + window
            messages.extend(received)
        return messages

    def _invoke(self, messages: list[dict[str, Any]]) -> None:
        started = time.perf_counter()
        self._release_one(messages)
        try:
            with worker.invocation(self.spec) as context:
                failed = len(invoke_with_batch(self.handler, self.sqs, self.queue_url, messages, context))
        except Exception:  # noqa: BLE001 - a function error: Lambda deletes nothing and the batch comes back
            worker.say(f"function error, {len(messages)} message(s) return after the visibility timeout")
            traceback.print_exc(file=sys.stdout)
            return
        elapsed = (time.perf_counter() - started) * 1000
        note = f", {failed} left for redelivery" if failed else ""
        worker.say(f"{len(messages)} in, {len(messages) - failed} done{note} ({elapsed:.0f} ms)")

    def _release_one(self, messages: list[dict[str, Any]]) -> None:
        """Fault: one message of the batch becomes visible again now, so it is delivered a second
        time while this delivery runs (the concurrent duplicate an expired visibility timeout makes)."""
        released = worker.faults.released(messages) if worker.faults is not None else None
        if released is not None:
            worker.say(f"fault: duplicate delivery of {released['MessageId']} while its batch runs")
            self.sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=released["ReceiptHandle"], VisibilityTimeout=0
            )


if __name__ == "__main__":
    worker.main(Poller)
