"""One consumer process's loop: receive a batch, run it through the sidecar, settle it with SQS.

The batch goes to `Sidecar.handle`, the call a Lambda actor's entry point makes, with the same event
shape and a clock in place of Lambda's context (`asya.consumer.clock`). Its answer is settled as
Lambda's SQS event source settles a partial batch response: what it does not list is deleted; what
it lists is left alone, so it comes back after the queue's visibility timeout as on Lambda (or when
the sidecar itself set its visibility, for a hop that must wait). Nothing is deleted before the
sidecar answered, so a hop that never returns (the process killed) loses nothing.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from asya.consumer.clock import BatchClock
from asya.consumer.holding import SQS_BATCH, Holding
from asya.consumer.records import sqs_event
from asya.consumer.settings import ConsumerSettings

LOG = logging.getLogger("asya.consumer")
WAIT_SECONDS = 20  # SQS's longest long poll
EXIT_OVERDUE = 3  # the process ended a batch that overran its time limit
Handle = Callable[[dict[str, Any], Any], dict[str, Any]]


class Stopped(BaseException):
    """SIGTERM during a long poll ends the poll at once (`asya.consumer.process`): an idle consumer
    exits in a moment, not 20 s later, which a short stop timeout would not wait for. A batch the
    abandoned poll may have taken comes back after its visibility timeout, run by no one meanwhile."""


class Consumer:
    def __init__(
        self,
        handle: Handle,
        sqs: Any,
        settings: ConsumerSettings,
        function_name: str,
        on_busy: Callable[[bool], None] = lambda _holding: None,
    ) -> None:
        """`on_busy` is told when the consumer starts holding a batch and when it settled it
        (`asya.consumer.protection`)."""
        self._handle = handle
        self._sqs = sqs
        self.settings = settings
        self._function_name = function_name
        attributes = sqs.get_queue_attributes(
            QueueUrl=settings.queue_url, AttributeNames=["QueueArn", "VisibilityTimeout"]
        )["Attributes"]
        self._queue_arn = attributes["QueueArn"]
        self.holding = Holding(sqs, settings.queue_url, int(attributes["VisibilityTimeout"]), _end_overdue)
        self.stopping = threading.Event()
        self.receiving = False  # in a long poll, which SIGTERM may cut short
        self.on_busy = on_busy

    def serve(self, wait_seconds: int = WAIT_SECONDS) -> None:
        """Receive and run batches until `stopping` is set; what arrives after it is released."""
        try:
            while not self.stopping.is_set():
                self.poll_once(wait_seconds)
        except Stopped:
            return
        finally:
            self.holding.stop()

    def poll_once(self, wait_seconds: int = WAIT_SECONDS) -> int:
        """One receive and the batch it brought; returns how many messages it brought."""
        self.receiving = True
        try:
            messages: list[dict[str, Any]] = self._sqs.receive_message(
                QueueUrl=self.settings.queue_url,
                MaxNumberOfMessages=self.settings.batch_size,
                WaitTimeSeconds=wait_seconds,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
        finally:
            self.receiving = False
        if not messages:
            return 0
        holding = self.holding
        holding.hold(messages, self.settings.hop_time_limit)
        if self.stopping.is_set():  # SIGTERM came during the long poll: not ours to start
            holding.release_all()
            return len(messages)
        self.on_busy(True)
        clock = BatchClock(
            self._function_name, self.settings.hop_time_limit, claim_leases=holding.leases, let_go=holding.let_go
        )
        try:
            answer = self._handle(sqs_event(self._queue_arn, messages), clock)
        finally:
            holding.leases.clear()
        failed = {item["itemIdentifier"] for item in answer.get("batchItemFailures", [])}
        holding.let_go(message["MessageId"] for message in messages)
        self._delete([message for message in messages if message["MessageId"] not in failed])
        self.on_busy(False)
        return len(messages)

    def _delete(self, messages: list[Mapping[str, Any]]) -> None:
        for start in range(0, len(messages), SQS_BATCH):
            chunk = messages[start : start + SQS_BATCH]
            entries = [{"Id": str(index), "ReceiptHandle": m["ReceiptHandle"]} for index, m in enumerate(chunk)]
            answer = self._sqs.delete_message_batch(QueueUrl=self.settings.queue_url, Entries=entries)
            for failure in answer.get("Failed", []):  # comes back and runs again: its hop's claim absorbs it
                LOG.warning("a finished message was not deleted: %s", failure.get("Message", failure.get("Code")))


def _end_overdue() -> None:
    """A batch's handler outlived its time limit and was not stopped (`asya.consumer.holding`): end
    the process as Lambda ends an invocation at its timeout. Its messages come back within one
    visibility timeout and are retried as a timed-out Lambda batch's are; the task's main process (or
    ECS, when this is it) starts another consumer."""
    LOG.error("a batch ran past its time limit and could not be stopped: this consumer process ends")
    for stream in (sys.stdout, sys.stderr):  # what is written reaches the log; no lock the stuck thread may hold
        stream.flush()
    os._exit(EXIT_OVERDUE)
