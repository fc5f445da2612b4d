"""The mesh's queues as the local stack reads them: how deep each is, which still holds work, and
when the whole mesh has gone quiet."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asya.names import resource_name


def _queue_urls(sqs: Any, namespace: str) -> list[str]:
    return list(sqs.list_queues(QueueNamePrefix=resource_name(namespace, "")).get("QueueUrls", []))


def _queue_depth(sqs: Any, url: str) -> tuple[int, int, int]:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        int(attributes["ApproximateNumberOfMessagesDelayed"]),
    )


def queue_depths(sqs: Any, namespace: str) -> dict[str, tuple[int, int, int]]:
    """Visible, in flight and delayed messages for every queue of the namespace."""
    return {url.rsplit("/", 1)[-1]: _queue_depth(sqs, url) for url in _queue_urls(sqs, namespace)}


def busy_queue(sqs: Any, namespace: str, first: str | None = None) -> str | None:
    """The URL of a queue of the namespace that holds a message (visible, in flight or delayed), or
    None. It asks `first` first (the queue found busy last time) and stops at the first busy one: a
    wait for idle asks one queue per look while the mesh is busy, not every queue, and so loads the
    endpoint it waits on (and a bench measures) less."""
    urls = _queue_urls(sqs, namespace)
    if first in urls:
        urls.remove(first)
        urls.insert(0, first)
    return next((url for url in urls if sum(_queue_depth(sqs, url))), None)


def open_spark_batches(dynamodb: Any, table: str | None) -> int:
    """Spark batches staged or running, or ended but not routed yet, in the batches `table` (None: the
    mesh has no Spark actor)."""
    if table is None:
        return 0
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=table, Select="COUNT", FilterExpression="attribute_exists(open_actor)"
    )
    return sum(int(page["Count"]) for page in pages)


@dataclass
class Busy:
    """Whether a mesh still holds work: a message in one of its queues, or an open Spark batch."""

    sqs: Any
    namespace: str
    open_batches: Callable[[], int]
    _busy_url: str | None = None  # the queue found busy last time, asked first

    def __call__(self) -> bool:
        self._busy_url = busy_queue(self.sqs, self.namespace, self._busy_url)
        return self._busy_url is not None or self.open_batches() > 0


def wait_until_idle(
    busy: Callable[[], bool], timeout: float, settle: float, on_tick: Callable[[], None] | None
) -> bool:
    """True once `busy` has stayed false for `settle` s, False if `timeout` s pass first (`on_tick`
    runs before each look)."""
    deadline = time.monotonic() + timeout
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        if on_tick is not None:
            on_tick()
        still = busy()
        now = time.monotonic()
        quiet_since = None if still else (quiet_since or now)
        if quiet_since is not None and now - quiet_since >= settle:
            return True
        time.sleep(0.25)
    return False
