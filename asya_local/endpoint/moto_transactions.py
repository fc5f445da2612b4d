"""DynamoDB transactions whose cost does not grow with the table: `apply_transaction_fix()` patches moto
5.2.5 in place.

moto's `TransactWriteItems` copies every table an action names (`copy.deepcopy`, once per action)
before it starts, so that it can put the copies back if an action fails. On the local stack's tasks
table, which holds every record of the session, one transaction of 25 actions cost seconds, and the
hundreds a wide fan-out makes (`asya.fans`: a bucket is opened and closed by one) took longer than
the fan-out's own test.

DynamoDB checks every condition against the items as they were before the transaction, and applies
all of the actions or none: that is done here without copying a table. Conditions first (a
cancellation names each action's reason, `None` for the others, as moto's did); then the actions.
An action that fails while being applied (an item grown past 400 KB) puts back the items written
before it, from copies of those items alone, and the error goes to the caller as moto raised it.
"""

from __future__ import annotations

import copy
from typing import Any

from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend

_OPERATIONS = ("ConditionCheck", "Put", "Delete", "Update")


def _target(backend: DynamoDBBackend, operation: str, action: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The table and key an action writes."""
    table_name = action["TableName"]
    if operation != "Put":
        return table_name, action["Key"]
    table = backend.get_table(table_name)
    key = {table.hash_key_attr: action["Item"][table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = action["Item"][table.range_key_attr]
    return table_name, key


def _failure(action: dict[str, Any], current: Any) -> tuple[Any, Any, Any]:
    """(code, message, item) for an action whose condition does not hold on `current`, else Nones."""
    condition = action.get("ConditionExpression")
    if condition is None:
        return None, None, None
    check = get_filter_expression(
        condition, action.get("ExpressionAttributeNames"), action.get("ExpressionAttributeValues")
    )
    if check.expr(current):
        return None, None, None
    returned = None
    if current is not None and action.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD":
        returned = current.to_json()["Attributes"]
    return "ConditionalCheckFailed", ConditionalCheckFailed().message, returned


def _apply(backend: DynamoDBBackend, operation: str, action: dict[str, Any], key: dict[str, Any]) -> None:
    table_name = action["TableName"]
    names, values = action.get("ExpressionAttributeNames") or {}, action.get("ExpressionAttributeValues") or {}
    if operation == "Put":
        backend.put_item(table_name, action["Item"])
    elif operation == "Delete":
        backend.delete_item(table_name, key)
    elif operation == "Update":
        backend.update_item(
            table_name,
            key,
            update_expression=action["UpdateExpression"],
            expression_attribute_names=names,
            expression_attribute_values=values,
        )


def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """Replaces `DynamoDBBackend.transact_write_items`: the same answers, all-or-nothing on items."""
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    targets: list[tuple[str, dict[str, Any]]] = []
    seen: set[tuple[str, str]] = set()
    errors: list[tuple[Any, Any, Any]] = []
    for item in transact_items:
        if len(item) > 1:
            raise TransactWriteSingleOpException
        ((operation, action),) = item.items()
        if operation not in _OPERATIONS:
            raise MockValidationException(f"Unsupported transaction operation {operation}")
        table_name, key = _target(self, operation, action)
        unique = (str(table_name), str(dict(sorted(key.items()))))
        if unique in seen:
            raise MultipleTransactionsException()
        seen.add(unique)
        targets.append((table_name, key))
        errors.append(_failure(action, self.get_item(table_name, key)))
    if any(code is not None for code, _, _ in errors):
        raise TransactionCanceledException(errors)
    before = [copy.deepcopy(self.get_item(table_name, key)) for table_name, key in targets]
    started = 0
    try:
        for item, (_, key) in zip(transact_items, targets, strict=True):
            ((operation, action),) = item.items()
            started += 1
            _apply(self, operation, action, key)
    except Exception:
        for (table_name, key), old in list(zip(targets, before, strict=True))[:started]:
            if old is None:
                self.delete_item(table_name, key)
            else:
                self.put_item(table_name, old.to_json()["Attributes"])
        raise


def apply_transaction_fix() -> None:
    """Patch moto's DynamoDB backend in this process (idempotent)."""
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
