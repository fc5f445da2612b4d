"""Tasks listed page by page, newest first, and the cursors every listing of the gateway hands out (the
tasks' and x-sump's): a cursor is opaque to its client and good only for the listing that made it."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from botocore.exceptions import ParamValidationError

from asya.dynamo import BatchIncompleteError, from_item, scan_filter
from asya.envelope import parse_rfc3339
from asya.task_record import RANKS
from asya.task_store import TaskStore
from asya_gateway.task_error import TaskError
from asya_gateway.views import task_view

MAX_PAGE = 100
LISTING_READS = 1_000  # index entries (or scanned items) one filtered listing reads at most


def since_moment(text: str) -> dt.datetime:
    """A listing's `since`: an RFC 3339 time with its zone, or a 400 that says so."""
    moment = parse_rfc3339(text.replace("Z", "+00:00"))
    if moment is None:
        raise TaskError(400, f"since: {text[:40]!r} is not an RFC 3339 time with its zone (2026-11-25T10:00:00Z)")
    return moment


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """What a listing keeps besides the status: tasks started `since` (RFC 3339), of `flow`, `roots` only."""

    since: str | None = None
    flow: str | None = None
    roots: bool = False

    @property
    def filters(self) -> bool:
        """Whether it leaves out some of what a read finds (`since` on the index is a key condition)."""
        return self.flow is not None or self.roots or self.since is not None

    def admits(self, item: dict[str, Any]) -> bool:
        if self.flow is not None and item.get("flow") != self.flow:
            return False
        return not (self.roots and item.get("root_id"))

    def scan_filter(self) -> dict[str, Any]:
        """The same, as a scan's filter expression (DynamoDB applies it to what the scan reads)."""
        return scan_filter(
            (("created_at", ">=", self.since), ("flow", "=", self.flow)), ["root_id"] if self.roots else []
        )


class TaskListing:
    """The tasks of the mesh's table, as the gateway lists them (`GET /api/v1/mesh`, MCP's listing)."""

    def __init__(self, tasks: TaskStore) -> None:
        self.tasks = tasks

    def page(
        self, status: str | None, limit: int, cursor: str | None, where: TaskFilter | None = None
    ) -> dict[str, Any]:
        """Newest first for one status (an index by status and creation time); all tasks otherwise.
        `where` narrows it: started since a moment (on the index's sort key, or filtered by the scan),
        of a flow, roots only (fan-out branches and gathered branches left out). The index keeps keys
        only, so the flow and roots filters apply to the records read: a page is filled from as many
        reads as it takes, each asking for no more than the page still lacks, up to `LISTING_READS`
        index entries (a wide fan-out's branches come before their root, newest first); a page may
        then be short, and `next_cursor` goes on from where the reads stopped."""
        where = where or TaskFilter()
        if status is not None and status not in RANKS:
            raise TaskError(400, f"status must be one of {', '.join(RANKS)}, got {status!r}")
        wanted = max(1, min(limit, MAX_PAGE))
        start = decode_cursor(cursor, status) if cursor else None
        items: list[dict[str, Any]] = []
        read = 0
        while True:
            page = self._read(status, where, wanted - len(items), start)
            read += int(page.get("ScannedCount", len(page.get("Items", []))))
            items += self._records(status, where, page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if start is None or len(items) >= wanted or not where.filters or read >= LISTING_READS:
                break
        return {
            "tasks": [task_view(item) for item in items],
            "next_cursor": encode_cursor(start, status) if start else None,
        }

    def _read(self, status: str | None, where: TaskFilter, limit: int, start: dict[str, Any] | None) -> Any:
        """One read of the listing (`TaskStore.page`); a cursor DynamoDB cannot take is a 400."""
        client = self.tasks.client
        try:
            return self.tasks.page(status, limit, start, since=where.since, filtered=where.scan_filter())
        except client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ValidationException":
                raise TaskError(400, "cursor is not one this API returned") from None
            raise
        except ParamValidationError:
            raise TaskError(400, "cursor is not one this API returned") from None

    def _records(
        self, status: str | None, where: TaskFilter, found: Sequence[dict[str, Any]]
    ) -> Sequence[dict[str, Any]]:
        """The tasks a read found, whole: a scan reads them whole; the index keeps keys only (a hop's
        update then writes no index entry), so their records are read, and filtered."""
        if status is None:
            return [from_item(item) for item in found]
        ids = [item["id"]["S"] for item in found]
        try:
            records = self.tasks.get_many(ids)
        except BatchIncompleteError as exc:  # a page must not leave tasks out unnoticed
            raise TaskError(503, f"{exc}; ask for this page again") from exc
        return [records[task_id] for task_id in ids if task_id in records and where.admits(records[task_id])]


def encode_cursor(key: dict[str, Any], listing: str | None) -> str:
    """Where the next page starts, and which listing it belongs to (a cursor is only good for it): a
    status of the tasks' listing (None: all tasks), or `sump`."""
    return base64.urlsafe_b64encode(orjson.dumps({"status": listing, "key": key})).decode()


def decode_cursor(cursor: str, listing: str | None, numbers: tuple[str, ...] = ()) -> dict[str, Any]:
    """The key a cursor carries. Every key attribute of the listed table and its indexes is a string,
    but those named in `numbers` (whole numbers), so anything else (another type, a set, a number
    DynamoDB cannot read) was not handed out here."""
    try:
        document = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (binascii.Error, ValueError):
        document = None
    key = document.get("key") if isinstance(document, dict) else None
    if not isinstance(key, dict) or not key or not all(_key_attribute(v, k in numbers) for k, v in key.items()):
        raise TaskError(400, "cursor is not one this API returned")
    if document.get("status") != listing:
        raise TaskError(400, f"cursor belongs to the listing of {document.get('status')!r}, not {listing!r}")
    return key


def _key_attribute(value: Any, number: bool) -> bool:
    """`{"S": text}` as DynamoDB types a key string (non-empty, at most 2,048 bytes of UTF-8 in a key),
    or `{"N": digits}` for a whole number."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    if number:
        digits = value.get("N")
        return isinstance(digits, str) and digits.isascii() and digits.isdigit() and len(digits) <= 12
    text = value.get("S")
    return isinstance(text, str) and 0 < len(text.encode("utf-8", "surrogatepass")) <= 2048
