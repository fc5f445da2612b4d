"""The local event source gathers batches as Lambda's poller does: within the batching window, counted
from the first message, until the batch is full; without a window the first receive is the batch."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest

from asya_local.functions import esm


class ScriptedQueue:
    """An SQS client whose receives return the messages that have "arrived" by the clock's time; an
    empty receive waits out its `WaitTimeSeconds`, as a long poll on a quiet queue does."""

    def __init__(self, arrivals: list[float]) -> None:
        self.now = 0.0
        self.waiting = sorted(arrivals)
        self.receives = 0

    def monotonic(self) -> float:
        return self.now

    def receive_message(self, **request: Any) -> dict[str, Any]:
        limit, wait = request["MaxNumberOfMessages"], request["WaitTimeSeconds"]
        self.receives += 1
        arrived = [at for at in self.waiting if at <= self.now][:limit]
        if not arrived:
            due = [at for at in self.waiting if at <= self.now + wait]
            self.now = due[0] if due else self.now + wait
            arrived = due[:1]
        self.waiting = self.waiting[len(arrived) :]
        self.now += 0.01
        return {"Messages": [{"MessageId": f"m{at}"} for at in arrived]}


def _poller(queue: ScriptedQueue, batch_size: int, window: float, monkeypatch: pytest.MonkeyPatch) -> esm.Poller:
    monkeypatch.setattr(time, "monotonic", queue.monotonic)
    poller = esm.Poller.__new__(esm.Poller)
    poller.spec = {"batch_size": batch_size, "batching_window": window}
    poller.sqs, poller.queue_url, poller.stopping = cast(Any, queue), "queue", False
    return poller


def test_a_window_gathers_a_trickle_into_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    # one envelope every 3 s, the first after 5 s of quiet: a 20 s window from the first holds 7
    queue = ScriptedQueue([5.0 + 3 * n for n in range(12)])
    batch = _poller(queue, batch_size=100, window=20, monkeypatch=monkeypatch)._gather()
    assert len(batch) == 7
    assert 25.0 <= queue.now <= 26.5


def test_a_full_batch_goes_before_its_window_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    queue = ScriptedQueue([0.0] * 25)
    batch = _poller(queue, batch_size=20, window=60, monkeypatch=monkeypatch)._gather()
    assert len(batch) == 20
    assert queue.now < 1


def test_without_a_window_the_first_receive_is_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    queue = ScriptedQueue([0.0, 0.0, 0.5, 0.6])
    batch = _poller(queue, batch_size=10, window=0, monkeypatch=monkeypatch)._gather()
    assert len(batch) == 2
    assert queue.receives == 1
