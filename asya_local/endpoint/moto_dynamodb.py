"""Make moto's DynamoDB answer one request at a time: `apply_dynamodb_lock()` patches moto 5.2.5 in place.

DynamoDB applies each write to an item atomically: of two conditional puts racing for one key, one
succeeds and the other gets `ConditionalCheckFailedException`. That is what the hop ledger's claims,
x-sink's claims and the task table's conditional status writes rely on. moto's server answers requests
on threads and its DynamoDB backend takes no lock: a conditional put reads the item, checks the
condition, then writes, so two threads can both pass the check (both claims won, a result kept
twice), a query can iterate a table while a write changes it (`RuntimeError: dictionary changed size
during iteration`, a 500), and two stream records can get one sequence number. Serializing DynamoDB
and DynamoDB Streams requests behind one lock gives the local stack DynamoDB's guarantees; it costs
little, since moto's Python runs one thread at a time anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.responses import DynamoHandler
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

_lock = threading.RLock()


def _one_at_a_time(call_action: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`call_action` under the lock. Not `functools.wraps`: the wrapper says it is this module's, which is
    how `asya_local.endpoint.patches` tells the patch is applied."""

    def locked(self: Any) -> Any:
        with _lock:
            return call_action(self)

    return locked


def apply_dynamodb_lock() -> None:
    """Patch moto's DynamoDB and DynamoDB Streams request handlers in this process (idempotent)."""
    for handler in (DynamoHandler, DynamoDBStreamsHandler):
        if not getattr(handler, "_asya_one_at_a_time", False):
            setattr(handler, "call_action", _one_at_a_time(handler.call_action))  # noqa: B010 - mypy: no method-assign
            setattr(handler, "_asya_one_at_a_time", True)  # noqa: B010
