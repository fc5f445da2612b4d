"""`ActorState`: an actor's durable keys in the mesh's state table (docs/actors.md, "State").

One item per key, `key` = `<actor>#<key>`, so IAM's `dynamodb:LeadingKeys` scopes each actor's role to
its own keys. An item holds the value as JSON text (or, over `MAX_VALUE_BYTES`, names the object in the
state bucket that holds it: `asya.state_objects`), a `version` that every write raises by one, and
the tokens of its last `RECENT_WRITES` writes (`asya.state_hop`). Every write is a `PutItem`
conditioned on the version it read, so nothing is lost between a read and a write:

- last writer wins: a write that lost the race reads again and writes again;
- compare-and-set (`if_version`): a write that lost the race raises `StateConflict`;
- a hop that runs again (its worker killed after the write, before SQS was told) finds its token on
  the item and does not write again.

A delete leaves a tombstone (no value, the version and tokens kept, expiring after
`TOMBSTONE_SECONDS`): a key deleted and written again does not restart at version 1, where a
compare-and-set holding an old version could succeed, and a rerun of the deleting hop is still known.
Reads are strongly consistent: a hop sees what the hop before it wrote.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from asya import state_hop
from asya.clients import LazyClient
from asya.state_objects import StateObjects

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

RECENT_WRITES = 32  # tokens kept per item: a rerun of any of a key's last 32 writes is recognised
# DynamoDB takes 400 KB an item, attribute names and the tokens included; a value's JSON over this much
# goes to the state bucket (`asya.state_objects`)
MAX_VALUE_BYTES = 350_000
MAX_KEY_BYTES = 1024  # the partition key takes 2048 bytes, the actor's name and '#' included
TOMBSTONE_SECONDS = 14 * 86_400  # SQS's longest retention: no rerun of a deleting hop comes later
WRITE_ATTEMPTS = 8  # last-writer-wins rounds against other writers before giving up


class StateError(Exception):
    """State that cannot be read or written as asked; the message says why."""


class StateConflict(StateError):  # noqa: N818 - the name says what happened, as the docs use it
    """A compare-and-set lost: the key is no longer at the version the handler read."""

    def __init__(self, key: str, expected: int, found: int) -> None:
        super().__init__(
            f"state {key!r} is at version {found}, not {expected}: another write came first; "
            "read it again (state.get_versioned) and retry"
        )
        self.key, self.expected, self.found = key, expected, found


class StateTooLarge(StateError):  # noqa: N818
    """A value whose JSON is over what one DynamoDB item takes, where no state bucket is named."""


@dataclass(frozen=True, slots=True)
class _Item:
    """A key's item as read: `value` is its JSON text, or `ref` names the object holding it (neither:
    never written, deleted, or expired)."""

    version: int = 0
    value: str | None = None
    hops: tuple[str, ...] = ()
    ref: str | None = None


_ABSENT = _Item()


class ActorState:
    """One actor's keys in `table` (its large values in `bucket`, `asya.state_objects`); `ttl_days`: a key
    not written for that long expires."""

    client: LazyClient[DynamoDBClient] = LazyClient("dynamodb")

    def __init__(
        self,
        table: str,
        actor: str,
        *,
        bucket: str | None = None,
        ttl_days: int | None = None,
        client: Any = None,
        s3: Any = None,
    ) -> None:
        self.table = table
        self.actor = actor
        self.ttl_days = ttl_days
        self._client = client
        self.objects = StateObjects(bucket, actor, client=s3) if bucket else None

    def get(self, key: str, default: Any = None) -> Any:
        """The key's value, or `default` if it was never written or was deleted."""
        text = self._value(key)[0]
        return default if text is None else orjson.loads(text)

    def get_versioned(self, key: str) -> tuple[Any, int]:
        """The key's value (None if absent) and its version (0 if never written): the version to pass
        as `if_version` to a write that must not overwrite another."""
        text, version = self._value(key)
        return (None if text is None else orjson.loads(text)), version

    def put(self, key: str, value: Any, *, if_version: int | None = None) -> int:
        """Write the key; with `if_version`, only if it is still at that version (else `StateConflict`).
        Returns the key's version after the write."""
        return self._write(key, self._encoded(key, value), if_version)

    def delete(self, key: str, *, if_version: int | None = None) -> int:
        """Delete the key (a tombstone: see the module's note); `if_version` as for `put`."""
        return self._write(key, None, if_version)

    def _value(self, key: str) -> tuple[str | None, int]:
        """The key's JSON text and version, its object read when the item names one. An object gone
        means a newer write replaced it after the item was read: the item is read again."""
        for _ in range(WRITE_ATTEMPTS):
            item = self._read(key)
            if item.ref is None or self.objects is None:
                return item.value, item.version
            text = self.objects.get(item.ref)
            if text is not None:
                return text, item.version
        raise StateError(f"state {key!r}: its value kept changing while it was read; try again later")

    def _write(self, key: str, value: str | None, if_version: int | None) -> int:
        token = state_hop.next_token(_checked(key))
        item = state_hop.seen(key) or self._read(key)
        large = value is not None and len(value.encode()) > MAX_VALUE_BYTES
        stored: str | None = None  # a large value's object, written once, at the first attempt to put it
        try:
            for _ in range(WRITE_ATTEMPTS):
                if token is not None and token in item.hops:
                    state_hop.applied(key)
                    return int(item.version)  # this hop wrote it already, in a run that did not finish
                if if_version is not None and item.version != if_version:
                    raise StateConflict(key, if_version, item.version)
                if large and stored is None and self.objects is not None:
                    stored = self.objects.put(key, str(value))
                hops = (*item.hops, token)[-RECENT_WRITES:] if token else item.hops
                written = _Item(item.version + 1, None if stored else value, hops, stored)
                if self._put(key, written, seen=item.version):
                    stored = None  # the item names it now
                    state_hop.applied(key)
                    state_hop.remember(key, written)
                    if item.ref is not None and self.objects is not None:
                        self.objects.delete(item.ref)  # the value it replaced
                    return written.version
                item = self._read(key)  # another writer came first: look again
            raise StateError(f"state {key!r}: {WRITE_ATTEMPTS} writes in a row lost to other writers; try later")
        finally:
            if stored is not None and self.objects is not None:
                self.objects.delete(stored)  # its write lost, or was not needed

    def _read(self, key: str) -> _Item:
        answer = self.client.get_item(
            TableName=self.table, Key={"key": {"S": self._partition(_checked(key))}}, ConsistentRead=True
        )
        found = answer.get("Item")
        item = _ABSENT
        if found is not None:
            hops = tuple(entry["S"] for entry in found.get("hops", {}).get("L", []))
            # DynamoDB deletes an expired item up to days later: until then it reads as absent
            expired = "expires_at" in found and int(found["expires_at"]["N"]) <= time.time()
            value = None if expired else found.get("value", {}).get("S")
            ref = None if expired else found.get("ref", {}).get("S")
            item = _Item(int(found["version"]["N"]), value, hops, ref)
        state_hop.remember(key, item)
        return item

    def _put(self, key: str, item: _Item, *, seen: int) -> bool:
        """Put `item` if the key is still at version `seen`; False if another writer came first."""
        record: dict[str, Any] = {"key": {"S": self._partition(key)}, "version": {"N": str(item.version)}}
        if item.value is not None:
            record["value"] = {"S": item.value}
        if item.ref is not None:
            record["ref"] = {"S": item.ref}
        if item.hops:
            record["hops"] = {"L": [{"S": token} for token in item.hops]}
        lasts = self.ttl_days * 86_400 if self.ttl_days else None
        if item.value is None and item.ref is None:
            lasts = min(lasts or TOMBSTONE_SECONDS, TOMBSTONE_SECONDS)
        if lasts is not None:
            record["expires_at"] = {"N": str(int(time.time()) + lasts)}
        if seen:
            condition: dict[str, Any] = {
                "ConditionExpression": "#v = :seen",
                "ExpressionAttributeNames": {"#v": "version"},
                "ExpressionAttributeValues": {":seen": {"N": str(seen)}},
            }
        else:  # never written, or expired since it was read
            condition = {"ConditionExpression": "attribute_not_exists(#k)", "ExpressionAttributeNames": {"#k": "key"}}
        try:
            self.client.put_item(TableName=self.table, Item=record, **condition)
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _partition(self, key: str) -> str:
        return f"{self.actor}#{key}"

    def _encoded(self, key: str, value: Any) -> str:
        try:
            text = orjson.dumps(value).decode()
        except TypeError as exc:
            raise StateError(f"state {key!r}: the value is not JSON ({exc})") from None
        size = len(text.encode())
        if size > MAX_VALUE_BYTES and self.objects is None:
            raise StateTooLarge(
                f"state {key!r}: the value is {size:,} bytes of JSON, over the {MAX_VALUE_BYTES:,} one state "
                "item takes, and this actor has no state bucket for larger ones (ASYA_STATE_BUCKET)"
            )
        return text


def _checked(key: str) -> str:
    if not isinstance(key, str) or not key:
        raise StateError(f"a state key is a non-empty string, not {key!r}")
    if len(key.encode()) > MAX_KEY_BYTES:
        raise StateError(f"state key {key[:40]!r}...: {len(key.encode()):,} bytes, over {MAX_KEY_BYTES:,}")
    return key
