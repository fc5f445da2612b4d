"""What one AWS request is billed as: the unit rules, the us-east-1 list prices, and a meter that
watches every boto3 call the mesh makes.

The meter hooks botocore itself (`before-parameter-build` and `after-call`, registered as built-in
handlers so every session made afterwards carries them, Powertools' own included), so it counts
requests where the sidecar, the crew and the gateway make them. DynamoDB capacity is not reported by
our calls (no `ReturnConsumedCapacity`), so it is computed from item sizes with DynamoDB's rules.

Unit rules (the ones `units_of` applies):
  - SQS: one request per 64 KB chunk of payload (a batch's bodies added up); at least one.
  - DynamoDB writes: 1 write unit per started KB of the larger of the item before and after (a
    conditional write that fails still pays for the item it read); `BatchWriteItem` per item;
    transactions double.
  - DynamoDB reads: 1 read unit per started 4 KB for a strongly consistent read, half for eventually
    consistent; `GetItem` and `BatchGetItem` round each item (a key not found still costs the
    minimum), `Query` rounds the sum of what it returned.
  - S3: PUT, COPY, POST and LIST are the PUT class; GET and everything else the GET class.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import boto3
import botocore.handlers

SQS_CHUNK = 64 * 1024
WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096

# us-east-1 list prices, USD per unit, as published on the AWS pricing pages (read 2026-11-23;
# check them there before quoting a bill). Free tiers are ignored: this is the price at scale.
PRICES_AS_OF = "2026-11-23"
PRICES: dict[str, Decimal] = {
    "sqs request": Decimal("0.40") / 1_000_000,  # standard queue, per 64 KB chunk
    "lambda request": Decimal("0.20") / 1_000_000,
    "lambda GB-second": Decimal("0.0000133334"),  # arm64 (the mesh's default), first 7.5 billion a month
    "dynamodb WRU": Decimal("0.625") / 1_000_000,  # on-demand write request unit
    "dynamodb RRU": Decimal("0.125") / 1_000_000,  # on-demand read request unit
    "s3 PUT class": Decimal("0.005") / 1000,  # Standard storage class
    "s3 GET class": Decimal("0.0004") / 1000,
    "logs GB ingested": Decimal("0.50"),  # CloudWatch Logs standard class, first 10 TB
    "apigateway REST request": Decimal("3.50") / 1_000_000,  # REST API, first 333 million
    "apigateway HTTP request": Decimal("1.00") / 1_000_000,  # HTTP API, first 300 million, per 512 KB
    "stepfunctions transition": Decimal("0.025") / 1000,  # Standard workflows
    "stepfunctions express request": Decimal("1.00") / 1_000_000,
    "stepfunctions express GB-second": Decimal("0.00001667"),  # billed in 64 MB and 100 ms steps
}
UNIT_OF_SERVICE = {"sqs": "request", "lambda": "request", "apigateway": "request"}


@dataclass(frozen=True, slots=True)
class Usage:
    """Billing units of one kind used by one operation: `operation` names the call (and the table)."""

    service: str
    operation: str
    unit: str
    amount: float

    @property
    def price_key(self) -> str:
        return f"{self.service} {self.unit}"

    @property
    def dollars(self) -> Decimal:
        return PRICES[self.price_key] * Decimal(str(self.amount))


# -- DynamoDB item sizes --------------------------------------------------------------------------------


def item_bytes(item: Mapping[str, Any]) -> int:
    """An item's size as DynamoDB bills it: every attribute's name plus its value."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(typed: Mapping[str, Any]) -> int:
    (kind, value), *_ = typed.items()
    if kind == "S":
        return len(str(value).encode())
    if kind == "B":
        return len(value)
    if kind == "N":
        return _number_bytes(str(value))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(part.encode()) for part in value)
    if kind == "NS":
        return sum(_number_bytes(part) for part in value)
    if kind == "BS":
        return sum(len(part) for part in value)
    if kind == "L":
        return 3 + sum(1 + _value_bytes(element) for element in value)
    if kind == "M":
        return 3 + sum(1 + len(name.encode()) + _value_bytes(element) for name, element in value.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def _number_bytes(text: str) -> int:
    """Leading and trailing zeros are not stored: 100 takes what 1 does."""
    mantissa = text.lstrip("-").lower().split("e")[0]
    digits = mantissa.replace(".", "").strip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def write_units(old_bytes: int, new_bytes: int, transactional: bool = False) -> int:
    units = max(1, math.ceil(max(old_bytes, new_bytes) / WRITE_UNIT_BYTES))
    return units * 2 if transactional else units


def read_units(total_bytes: int, consistent: bool, transactional: bool = False) -> float:
    units = max(1, math.ceil(total_bytes / READ_UNIT_BYTES)) * (1.0 if consistent else 0.5)
    return units * 2 if transactional else units


# -- what one call is billed as -------------------------------------------------------------------------


def sqs_chunks(payload_bytes: int) -> int:
    return max(1, math.ceil(payload_bytes / SQS_CHUNK))


def sqs_usage(operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> list[Usage]:
    if operation == "SendMessage":
        size = _message_bytes(params)
    elif operation == "SendMessageBatch":
        size = sum(_message_bytes(entry) for entry in params.get("Entries", []))
    elif operation == "ReceiveMessage":
        messages = parsed.get("Messages", [])
        if not messages:
            return [Usage("sqs", "ReceiveMessage (empty)", "request", 1)]
        size = sum(len(message.get("Body", "").encode()) for message in messages)
    else:
        size = 0
    return [Usage("sqs", operation, "request", sqs_chunks(size))]


def _message_bytes(message: Mapping[str, Any]) -> int:
    attributes = message.get("MessageAttributes", {})
    attribute_bytes = sum(
        len(name.encode()) + len(value.get("DataType", "")) + len(str(value.get("StringValue", "")).encode())
        for name, value in attributes.items()
    )
    return len(str(message.get("MessageBody", "")).encode()) + attribute_bytes


def s3_usage(operation: str) -> list[Usage]:
    put_class = operation.startswith(("Put", "Copy", "Post", "List", "Create", "Complete", "Upload"))
    return [Usage("s3", operation, "PUT class" if put_class else "GET class", 1)]


Lookup = Callable[[str, Mapping[str, Any]], int]  # (table, key) -> item bytes, 0 if absent
KeyOf = Callable[[str, Mapping[str, Any]], dict[str, Any]]  # (table, item) -> its key


def dynamodb_usage(
    operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any], old: Mapping[str, int], new: Mapping[str, int]
) -> list[Usage]:
    """`old` / `new`: the written items' sizes before and after the call, by table (single-item writes)."""
    table = str(params.get("TableName", ""))
    label = f"{operation} {table}".strip()
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        return [Usage("dynamodb", label, "WRU", write_units(old.get(table, 0), new.get(table, 0)))]
    if operation == "BatchWriteItem":
        found: list[Usage] = []
        for name, requests in params.get("RequestItems", {}).items():
            writes = sum(
                write_units(0, item_bytes(request["PutRequest"]["Item"])) if "PutRequest" in request else 1
                for request in requests
            )
            found.append(Usage("dynamodb", f"BatchWriteItem {name}", "WRU", writes))
        return found
    if operation == "TransactWriteItems":
        units = sum(
            write_units(0, item_bytes(_written_item(entry)), transactional=True) for entry in params["TransactItems"]
        )
        return [Usage("dynamodb", "TransactWriteItems", "WRU", units)]
    if operation == "GetItem":
        size = item_bytes(parsed.get("Item", {}))
        return [Usage("dynamodb", label, "RRU", read_units(size, bool(params.get("ConsistentRead"))))]
    if operation == "BatchGetItem":
        found = []
        for name, request in params.get("RequestItems", {}).items():
            items = parsed.get("Responses", {}).get(name, [])
            consistent = bool(request.get("ConsistentRead"))
            missing = max(0, len(request.get("Keys", [])) - len(items))
            reads = sum(read_units(item_bytes(item), consistent) for item in items)
            found.append(Usage("dynamodb", f"BatchGetItem {name}", "RRU", reads + missing * read_units(0, consistent)))
        return found
    if operation in ("Query", "Scan"):
        size = sum(item_bytes(item) for item in parsed.get("Items", []))
        return [Usage("dynamodb", label, "RRU", read_units(size, bool(params.get("ConsistentRead"))))]
    return [Usage("dynamodb", label, "request", 0)]  # control plane: not billed per request


def _written_item(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    for kind in ("Put", "Update", "Delete", "ConditionCheck"):
        if kind in entry:
            written: Mapping[str, Any] = entry[kind].get("Item", entry[kind].get("Key", {}))
            return written
    return {}


# -- the meter ------------------------------------------------------------------------------------------


class Meter:
    """Counts the billing units of every AWS call made while it is installed.

    `lookup` reads an item's current size for the DynamoDB write rules (it calls AWS itself: the meter
    ignores calls made while it is looking)."""

    def __init__(self, lookup: Lookup, key_of: KeyOf) -> None:
        self.lookup = lookup
        self.key_of = key_of
        self.usage: list[Usage] = []
        self.calls: Counter[str] = Counter()
        self.seconds = 0.0  # spent looking items up
        self._looking = False

    def before(self, event_name: str, params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        if self._looking:
            return
        service, operation = _service_operation(event_name)
        context["asya_cost_params"] = dict(params)
        if service == "dynamodb" and operation in ("PutItem", "UpdateItem", "DeleteItem"):
            context["asya_cost_old"] = self._size(str(params["TableName"]), params)

    def after(self, event_name: str, parsed: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        if self._looking or "asya_cost_params" not in context:
            return
        service, operation = _service_operation(event_name)
        params = context.pop("asya_cost_params")
        self.calls[f"{service} {operation}"] += 1
        if service == "sqs":
            self.usage += sqs_usage(operation, params, parsed)
        elif service == "s3":
            self.usage += s3_usage(operation)
        elif service == "dynamodb":
            table = str(params.get("TableName", ""))
            old = {table: int(context.pop("asya_cost_old", 0))}
            new = {table: self._size(table, params)} if operation in ("PutItem", "UpdateItem") else {}
            self.usage += dynamodb_usage(operation, params, parsed, old, new)

    def _size(self, table: str, params: Mapping[str, Any]) -> int:
        with self.paused():
            return self.lookup(table, params.get("Key") or self.key_of(table, params.get("Item", {})))

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Calls made inside are not the mesh's (the meter's own look-ups, the bench's reads)."""
        looking, self._looking = self._looking, True
        started = time.perf_counter()
        try:
            yield
        finally:
            self._looking = looking
            if not looking:
                self.seconds += time.perf_counter() - started


def _service_operation(event_name: str) -> tuple[str, str]:
    _, service, operation = event_name.split(".", 2)
    return service, operation


class ItemLookup:
    """Reads an item's current size for the write rules, through moto (calls the meter ignores)."""

    def __init__(self) -> None:
        self._keys: dict[str, list[str]] = {}
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = boto3.client("dynamodb")
        return self._client

    def key_of(self, table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        if table not in self._keys:
            schema = self.client.describe_table(TableName=table)["Table"]["KeySchema"]
            self._keys[table] = [part["AttributeName"] for part in schema]
        return {name: item[name] for name in self._keys[table] if name in item}

    def size(self, table: str, key: Mapping[str, Any]) -> int:
        found = self.client.get_item(TableName=table, Key=dict(key), ConsistentRead=True)
        return item_bytes(found.get("Item", {}))


@contextmanager
def botocore_hooks(hooks: list[tuple[str, Callable[..., None]]]) -> Iterator[None]:
    """Every botocore session made inside carries `hooks` (event name, handler), with a fresh default
    session on the way in and out: a client made before would not see them, one made after keeps none."""
    botocore.handlers.BUILTIN_HANDLERS.extend(hooks)
    boto3.setup_default_session()
    try:
        yield
    finally:
        for hook in hooks:
            botocore.handlers.BUILTIN_HANDLERS.remove(hook)
        boto3.setup_default_session()


def metered(meter: Meter) -> AbstractContextManager[None]:
    """Every botocore session made inside carries the meter's hooks."""
    return botocore_hooks([("before-parameter-build", meter.before), ("after-call", meter.after)])


@dataclass
class Measurement:
    """What one flow's run used, in billing units, and how many tasks and hops it took."""

    tasks: int
    hops: int
    usage: list[Usage]
    empty_polls: int  # measured in process; not billed here (the idle floor is modelled)
    queues: int
    hop_seconds: float  # the actors' and the crew's invocations, added up
    decisions: int = 0  # a flow program's conditions evaluated (its ifs and loop tests): no hop of their own

    def lines(self) -> dict[tuple[str, str, str], float]:
        """Amount used by (service, operation, unit), over the whole run."""
        total: Counter[tuple[str, str, str]] = Counter()
        for item in self.usage:
            total[(item.service, item.operation, item.unit)] += item.amount  # type: ignore[assignment]
        return dict(total)

    def dollars(self) -> Decimal:
        return sum((item.dollars for item in self.usage), Decimal(0))

    def units(self, service: str, unit: str) -> float:
        return sum(item.amount for item in self.usage if item.service == service and item.unit == unit)


# -- the bill -------------------------------------------------------------------------------------------


def per_million(dollars: Decimal, count: int) -> Decimal:
    return dollars / count * 1_000_000 if count else Decimal(0)


def step_functions(
    hops_per_task: float, seconds_per_hop: float, decisions_per_task: float = 0.0
) -> tuple[Decimal, Decimal]:
    """The same flow orchestrated by Step Functions, per task: each hop a Task state invoking a Lambda
    function (one invocation per hop, no batches), each decision of a flow program a Choice state (an
    `if`, each test of a loop's condition; a `try`'s `except` is the Task's Catch, no state of its own).
    Standard: a transition per state entered plus the start, Choice states included. Express: a
    request, and the whole execution's time (each Task state taking as long as our hop's Lambda
    invocation does, a Choice state no time, rounded up to 100 ms) at the smallest 64 MB."""
    lambdas = PRICES["lambda request"] * Decimal(str(hops_per_task))
    transitions = Decimal(str(hops_per_task + decisions_per_task + 1))
    standard = PRICES["stepfunctions transition"] * transitions + lambdas
    billed = max(0.1, -(-hops_per_task * seconds_per_hop // 0.1) * 0.1)
    express = PRICES["stepfunctions express request"] + PRICES["stepfunctions express GB-second"] * Decimal(
        str(billed * 64 / 1024)
    )
    return standard, express + lambdas
