"""Independent AWS calls made at once, so that a hop waits for the slowest of them rather than their sum.

Used only where nothing orders the calls: the sends of one round to different queues, the chunks of
one queue's send, a join's keeping of a branch and the write that ends the branch's record. A single
call runs in the caller's thread, with no pool: the common hop pays nothing for this. botocore's
clients are safe to share between threads (`asya.clients` makes each one once, under a lock).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# botocore keeps 10 connections per client (`max_pool_connections`): more threads would wait for one
MOST_AT_ONCE = 10


def together(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Each call's result, in order, once all have returned; the first call's error (in order) is
    raised after every call has finished, so none is left running behind the caller."""
    if len(calls) <= 1:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=min(len(calls), MOST_AT_ONCE), thread_name_prefix="asya-call") as pool:
        futures = [pool.submit(call) for call in calls]
    return [future.result() for future in futures]
