"""DynamoDB's batch calls, sent in the sizes the API takes and finished or failed within a bound.

`BatchWriteItem` (25 requests) and `BatchGetItem` (100 keys) may answer with part of the work undone:
`UnprocessedItems` / `UnprocessedKeys`, mostly when the table is throttled. That answer is a success
to botocore, whose retries (standard mode) cover only whole calls that fail, so the caller has to send
the rest again. Here only the rest is sent again, after a wait with exponential backoff and full jitter
(a random wait up to a ceiling that doubles each retry), a few times (`Backoff.attempts`), with every
wait of one call together kept under `Backoff.budget` (a writer of the live event log must land its
events within `asya.live.SETTLE_SECONDS`). What is still undone then raises `BatchIncompleteError`, naming
the table and how many items remain: never a silent drop, never an endless loop. What a remaining
item means (retry the message, go on without it) is the caller's to decide and to say.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

WRITE_LIMIT = 25  # requests in one BatchWriteItem
GET_LIMIT = 100  # keys in one BatchGetItem

Item = dict[str, Any]  # DynamoDB's typed JSON: a key, an item or a write request


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long a batch call keeps sending what DynamoDB left unprocessed. The defaults wait at most
    0.05 + 0.1 + 0.2 s between four calls of one chunk, and 0.5 s over the whole call."""

    attempts: int = 4  # calls per chunk, the first one included
    base: float = 0.05  # ceiling of the first wait, in seconds; doubles each retry
    cap: float = 0.4  # ceiling of any one wait
    budget: float = 0.5  # all the waits of one call together
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[float, float], float] = random.uniform  # a wait between the two bounds

    def __post_init__(self) -> None:
        if self.attempts < 1 or min(self.base, self.cap, self.budget) < 0:
            raise ValueError(f"a backoff needs at least one attempt and no negative time: {self}")


DEFAULT_BACKOFF = Backoff()


class BatchIncompleteError(Exception):
    """DynamoDB left items unprocessed after every retry the backoff allows. `remaining` holds them
    (with the chunks not sent after them), `read` the items a get did read before it gave up."""

    def __init__(
        self, operation: str, table: str, remaining: list[Item], *, total: int, attempts: int, read: list[Item]
    ) -> None:
        super().__init__(
            f"DynamoDB {operation} on table {table!r}: {len(remaining)} of {total} items still unprocessed "
            f"after {attempts} attempts (the table is throttled; retry later or raise its capacity)"
        )
        self.table = table
        self.remaining = remaining
        self.read = read


class _Waits:
    """The waits of one batch call: a ceiling doubling per retry, jittered, within the call's budget."""

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff
        self.left = backoff.budget

    def wait(self, retry: int) -> bool:
        """Wait before retry number `retry` (1, 2, ...); False if the budget is spent."""
        backoff = self.backoff
        if self.left <= 1e-9:  # spent (a float that subtraction left a hair above zero counts as spent)
            return False
        ceiling = min(backoff.cap, backoff.base * 2 ** (retry - 1), self.left)
        delay = min(max(backoff.jitter(0.0, ceiling), 0.0), ceiling)
        self.left -= delay
        backoff.sleep(delay)
        return True


def batch_write(
    client: DynamoDBClient, table: str, requests: Sequence[Item], *, backoff: Backoff = DEFAULT_BACKOFF
) -> None:
    """Send write requests (`{"PutRequest": ...}` / `{"DeleteRequest": ...}`) to one table, in order,
    25 to a call. Raises `BatchIncompleteError` with the requests not written."""

    def send(chunk: list[Item]) -> tuple[list[Item], list[Item]]:
        request: Any = {table: chunk}
        unprocessed: Any = client.batch_write_item(RequestItems=request).get("UnprocessedItems", {})
        return [], list(unprocessed.get(table, []))

    _run("BatchWriteItem", table, list(requests), send, limit=WRITE_LIMIT, backoff=backoff)


def batch_get(
    client: DynamoDBClient,
    table: str,
    keys: Iterable[Item],
    *,
    backoff: Backoff = DEFAULT_BACKOFF,
    **options: Any,
) -> list[Item]:
    """The items under these keys in one table (missing keys are absent), 100 keys to a call;
    `options` are the table's `KeysAndAttributes` besides `Keys` (`ProjectionExpression`,
    `ConsistentRead`, ...). Raises `BatchIncompleteError` with the keys not read, and what was read."""

    def send(chunk: list[Item]) -> tuple[list[Item], list[Item]]:
        request: Any = {table: {"Keys": chunk, **options}}
        response = client.batch_get_item(RequestItems=request)
        unprocessed: Any = response.get("UnprocessedKeys", {}).get(table, {})
        return list(response.get("Responses", {}).get(table, [])), list(unprocessed.get("Keys", []))

    return _run("BatchGetItem", table, list(keys), send, limit=GET_LIMIT, backoff=backoff)


def _run(
    operation: str,
    table: str,
    work: list[Item],
    send: Callable[[list[Item]], tuple[list[Item], list[Item]]],
    *,
    limit: int,
    backoff: Backoff,
) -> list[Item]:
    """Send `work` chunk by chunk; each chunk's leftovers again while the backoff allows."""
    read: list[Item] = []
    waits = _Waits(backoff)
    for start in range(0, len(work), limit):
        pending = work[start : start + limit]
        attempt = 0
        while pending:
            if attempt == backoff.attempts or (attempt and not waits.wait(attempt)):
                raise BatchIncompleteError(
                    operation, table, pending + work[start + limit :], total=len(work), attempts=attempt, read=read
                )
            got, pending = send(pending)
            read.extend(got)
            attempt += 1
    return read


# Reasons DynamoDB cancels a transaction that mean "try again": another transaction held one of its
# items, or the table throttled. botocore retries neither (a cancellation is not an error it knows).
RETRIED_CANCELLATIONS = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"})
TRANSACTION_BACKOFF = Backoff(attempts=8, base=0.02, cap=0.5, budget=3.0)


class TransactionIncompleteError(Exception):
    """A transaction kept being cancelled for conflicts or throttling after every retry its backoff allows."""


def transact(
    client: DynamoDBClient, actions: Sequence[Item], *, backoff: Backoff = TRANSACTION_BACKOFF
) -> list[str] | None:
    """One `TransactWriteItems`: None when it committed, else each action's cancellation code in order
    (`"None"` for an action that was not the cause, `"ConditionalCheckFailed"` for a condition that did
    not hold). Cancellations for conflicts or throttling alone are retried under `backoff`, then raise
    `TransactionIncompleteError`."""
    waits = _Waits(backoff)
    for attempt in range(backoff.attempts):
        if attempt and not waits.wait(attempt):
            break
        try:
            client.transact_write_items(TransactItems=list(actions))  # type: ignore[arg-type]
        except client.exceptions.TransactionCanceledException as exc:
            codes = [str(reason.get("Code", "None")) for reason in exc.response.get("CancellationReasons", [])]
            if not {code for code in codes if code != "None"} <= RETRIED_CANCELLATIONS:
                return codes
            continue
        return None
    raise TransactionIncompleteError(
        f"DynamoDB TransactWriteItems of {len(actions)} actions still cancelled for conflicts after "
        f"{backoff.attempts} attempts (many writers on one root at once, or a throttled table)"
    )


def scan_filter(compared: Iterable[tuple[str, str, str | None]], absent: Iterable[str] = ()) -> dict[str, Any]:
    """A scan's `FilterExpression` and its names and values: each `(attribute, operator, value)` whose
    value is not None compares a string attribute, and each of `absent` must be missing. Every
    attribute is aliased: DynamoDB reserves hundreds of words, and an alias never clashes."""
    chosen = [(name, operator, value) for name, operator, value in compared if value is not None]
    missing = list(absent)
    terms = [f"#{name} {operator} :{name}" for name, operator, _ in chosen]
    terms += [f"attribute_not_exists(#{name})" for name in missing]
    if not terms:
        return {}
    found: dict[str, Any] = {
        "FilterExpression": " AND ".join(terms),
        "ExpressionAttributeNames": {f"#{name}": name for name in [*(name for name, _, _ in chosen), *missing]},
    }
    if chosen:
        found["ExpressionAttributeValues"] = {f":{name}": {"S": value} for name, _, value in chosen}
    return found


def update_arguments(
    table: str,
    key: str,
    update: str,
    values: Mapping[str, Any],
    *,
    condition: str | None = None,
    names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One update of the item whose `id` is `key`, as `UpdateItem` takes it and as a transaction's
    `Update` action holds it; `names`: the aliases its expressions use."""
    arguments: dict[str, Any] = {
        "TableName": table,
        "Key": {"id": {"S": key}},
        "UpdateExpression": update,
        "ExpressionAttributeValues": to_item(values),
    }
    if condition:
        arguments["ConditionExpression"] = condition
    if names:
        arguments["ExpressionAttributeNames"] = dict(names)
    return arguments


# -- DynamoDB's typed JSON, both ways (boto3's TypeSerializer wants Decimals and rejects floats) --------


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _typed(value) for key, value in values.items()}


def _typed(value: Any) -> dict[str, Any]:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float | Decimal):
        return {"N": repr(value) if isinstance(value, float) else str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, set | frozenset):
        return {"SS": sorted(value)}
    if isinstance(value, Mapping):
        return {"M": to_item(value)}
    if isinstance(value, list | tuple):
        return {"L": [_typed(item) for item in value]}
    raise TypeError(f"cannot store {type(value).__name__} in DynamoDB")


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _plain(value) for key, value in item.items()}


def _plain(typed: Mapping[str, Any]) -> Any:
    (kind, value), *_ = typed.items()
    if kind in {"S", "BOOL"}:
        return value
    if kind == "N":
        number = Decimal(value)
        return int(number) if number == number.to_integral_value() else float(number)
    if kind == "NULL":
        return None
    if kind == "SS":
        return set(value)
    if kind == "M":
        return from_item(value)
    if kind == "L":
        return [_plain(item) for item in value]
    return value
