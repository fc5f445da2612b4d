"""A clock for moto's in-memory SQS that a test moves forward, so that waits pass in no time.

A retry the sidecar sends with `DelaySeconds`, a message a failed batch leaves for the visibility
timeout, a redelivery that ends in the dead-letter queue: on AWS these take seconds to minutes. The
in-process mesh skips them. When every queue is idle but some message is still delayed or in flight,
`advance_to_next` moves the queues' clock to the moment the first of them becomes visible, as if the
test had waited exactly that long. Only SQS's view of time moves: handlers, deadlines and task
records keep the wall clock, which is why a test of a task's deadline belongs to the local stack.

moto keeps each message's `delayed_until` and `visible_at` (milliseconds) and compares them with
`moto.sqs.models.unix_time_millis`; that name is what this patches and what it reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from unittest import mock

from moto.core.utils import unix_time, unix_time_millis
from moto.sqs import models as sqs_models
from moto.sqs.models import sqs_backends

from asya_local.functions.lambda_shapes import ACCOUNT, REGION

_wall_millis = unix_time_millis
_wall_seconds = unix_time


class QueueClock:
    """`with QueueClock() as clock:` — moto's SQS reads its time from here while the block runs."""

    def __init__(self) -> None:
        self.skipped_seconds = 0.0  # how far the queues' clock is ahead of the wall clock
        self._patches = [
            mock.patch.object(sqs_models, "unix_time_millis", self.millis),
            mock.patch.object(sqs_models, "unix_time", self.seconds),
        ]

    def millis(self, *args: Any) -> float:
        return float(_wall_millis(*args)) + self.skipped_seconds * 1000

    def seconds(self, *args: Any) -> float:
        return float(_wall_seconds(*args)) + self.skipped_seconds

    def __enter__(self) -> QueueClock:
        for patch in self._patches:
            patch.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for patch in reversed(self._patches):
            patch.stop()

    def advance_to_next(self, queue_names: Iterable[str]) -> bool:
        """Move the clock to when the first message of these queues that is delayed or in flight
        becomes visible; False when there is none (the queues are empty)."""
        now = self.millis()
        queues = sqs_backends[ACCOUNT][REGION].queues
        waits = [
            max(message.delayed_until, message.visible_at) - now
            for name in queue_names
            if name in queues
            for message in queues[name]._messages  # moto keeps them nowhere else
        ]
        later = [wait for wait in waits if wait >= 0]
        if not later:
            return False
        self.skipped_seconds += (min(later) + 1) / 1000
        return True
