"""The cursors the gateway's listings hand out (the tasks' and x-sump's): opaque to their client, and
good only for the listing that made them.

x-sump's listing goes on from one key. The tasks' listing merges one index read per status, newest
first (`asya_gateway.listing`), so its cursor says where each status's read goes on (`TaskCursor`)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from asya_gateway.task_error import TaskError

INDEX_KEY = frozenset(("id", "status", "created_at"))  # an entry of the status index, as a read's start
NOT_OURS = "cursor is not one this API returned"


def encode_cursor(key: dict[str, Any], listing: str) -> str:
    """Where the next page of a one-key listing (`sump`) starts."""
    return _encode({"status": listing, "key": key})


def decode_cursor(cursor: str, listing: str, numbers: tuple[str, ...] = ()) -> dict[str, Any]:
    """The key a cursor carries. Every key attribute of the listed table and its indexes is a string,
    but those named in `numbers` (whole numbers), so anything else (another type, a set, a number
    DynamoDB cannot read) was not handed out here."""
    document = _decode(cursor, listing)
    key = document.get("key")
    if not isinstance(key, dict) or not key or not all(key_attribute(v, k in numbers) for k, v in key.items()):
        raise TaskError(400, NOT_OURS)
    return key


@dataclass(frozen=True, slots=True)
class TaskCursor:
    """Where a listing of tasks goes on. `after`: for each status still to read, the index entry its
    read goes on after, or None to read it from its newest entry; a status left out was read to its
    end. `before`: the creation time of the last task listed, which bounds a status read from its
    newest entry, so that a task created since the first page does not turn up on an older one."""

    after: Mapping[str, dict[str, Any] | None]
    before: str | None = None
    listing: str | None = field(default=None, compare=False)  # the status listed, None for all

    @classmethod
    def first(cls, statuses: list[str], listing: str | None) -> TaskCursor:
        return cls(dict.fromkeys(statuses), None, listing)

    def encode(self) -> str:
        return _encode({"status": self.listing, "after": dict(self.after), "before": self.before})

    @classmethod
    def decode(cls, cursor: str, listing: str | None, statuses: list[str]) -> TaskCursor:
        """The cursor a listing of `listing` (a status, None for all) handed out, each status's entry
        checked as an index entry of that status; anything else is a 400."""
        document = _decode(cursor, listing)
        after, before = document.get("after"), document.get("before")
        if not isinstance(after, dict) or not after or not (before is None or _text(before)):
            raise TaskError(400, NOT_OURS)
        for status, key in after.items():
            if status not in statuses or not (key is None or _index_entry(key, status)):
                raise TaskError(400, NOT_OURS)
        return cls(after, before, listing)


def _index_entry(key: Any, status: str) -> bool:
    return (
        isinstance(key, dict)
        and set(key) == INDEX_KEY
        and all(key_attribute(value, number=False) for value in key.values())
        and key["status"]["S"] == status
    )


def _encode(document: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(document)).decode()


def _decode(cursor: str, listing: str | None) -> dict[str, Any]:
    """The cursor's document, refused (400) when it is not one or belongs to another listing."""
    try:
        document = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (binascii.Error, ValueError):
        document = None
    if not isinstance(document, dict):
        raise TaskError(400, NOT_OURS)
    if document.get("status") != listing:
        raise TaskError(400, f"cursor belongs to the listing of {document.get('status')!r}, not {listing!r}")
    return document


def _text(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 64


def key_attribute(value: Any, number: bool) -> bool:
    """`{"S": text}` as DynamoDB types a key string (non-empty, at most 2,048 bytes of UTF-8 in a key),
    or `{"N": digits}` for a whole number."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    if number:
        digits = value.get("N")
        return isinstance(digits, str) and digits.isascii() and digits.isdigit() and len(digits) <= 12
    text = value.get("S")
    return isinstance(text, str) and 0 < len(text.encode("utf-8", "surrogatepass")) <= 2048
