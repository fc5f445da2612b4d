"""The cursors the gateway's listings hand out (the tasks', x-sump's, A2A's `nextPageToken`): sealed,
good only for the listing and the caller that got them.

A cursor says where a listing's reads go on, which may be past entries the caller was not shown
(another caller's tasks, read and left out). So it is sealed (`CursorSeal`): encrypted and
authenticated with AES-GCM under a key the gateway holds, the caller it was handed to as associated
data. A client can neither read it nor make one, and a cursor handed to one caller does not open for
another: each is a 400, as a cursor this API never returned.

x-sump's listing goes on from one key. The tasks' listing merges one index read per status, newest
first (`asya_gateway.listing`), so its cursor says where each status's read goes on (`TaskCursor`)."""

from __future__ import annotations

import base64
import binascii
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from asya.seal import secret_value
from asya_gateway.callers import Caller
from asya_gateway.task_error import TaskError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

INDEX_KEY = frozenset(("id", "status", "created_at"))  # an entry of the status index, as a read's start
NOT_OURS = "cursor is not one this API returned to this caller"
NONCE_BYTES = 12  # AES-GCM's standard nonce, random for each cursor
KEY_INFO = b"asya-gateway-cursor-v1"  # what the key derived from the gateway's secret is for


class CursorKey:
    """The gateway's cursor key: derived (HKDF-SHA256) from the Secrets Manager secret `secret_arn`
    names, read once per execution environment when a cursor is first sealed or opened, so that a
    request that lists nothing costs no read. Without a secret (tests, an embedding that sets none), a
    random key of this process: its cursors open nowhere else. `info` says what the key is for: the
    follow tickets' key (`asya_gateway.tickets`) is derived from the same secret under another, so
    neither opens what the other sealed."""

    def __init__(
        self, secret_arn: str | None, read_secret: Callable[[str], str] | None = None, info: bytes = KEY_INFO
    ) -> None:
        self.secret_arn = secret_arn
        self.info = info
        self.read_secret = read_secret or secret_value
        self._aead: AESGCM | None = None
        self._lock = threading.Lock()

    @property
    def aead(self) -> AESGCM:
        with self._lock:
            if self._aead is None:
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # loaded by a listing, not at start

                self._aead = AESGCM(self._key())
            return self._aead

    def _key(self) -> bytes:
        from cryptography.hazmat.primitives.hashes import SHA256
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        if self.secret_arn is None:
            return os.urandom(32)
        secret = self.read_secret(self.secret_arn).encode()
        return HKDF(algorithm=SHA256(), length=32, salt=None, info=self.info).derive(secret)

    def bound(self, caller: Caller) -> CursorSeal:
        return CursorSeal(self, caller)


@dataclass(frozen=True, slots=True)
class CursorSeal:
    """Seals and opens one caller's cursors: the caller (who it is, whether an admin) is the
    associated data, so a cursor opens only for the caller it was sealed for."""

    key: CursorKey
    caller: Caller

    def seal(self, document: dict[str, Any]) -> str:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self.key.aead.encrypt(nonce, orjson.dumps(document), self._bound_to())
        return base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")

    def open(self, cursor: str, listing: str | None) -> dict[str, Any]:
        """The cursor's document, refused (400) when it is not one sealed for this caller, or belongs
        to another listing."""
        from cryptography.exceptions import InvalidTag

        try:
            raw = base64.urlsafe_b64decode(cursor.encode() + b"=" * (-len(cursor) % 4))
            document = orjson.loads(self.key.aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], self._bound_to()))
        except (binascii.Error, ValueError, InvalidTag):  # not base64, too short, tampered, another's
            document = None
        if not isinstance(document, dict):
            raise TaskError(400, NOT_OURS)
        if document.get("status") != listing:
            raise TaskError(400, f"cursor belongs to the listing of {document.get('status')!r}, not {listing!r}")
        return document

    def _bound_to(self) -> bytes:
        return orjson.dumps([self.caller.owner, self.caller.admin])


def encode_cursor(key: dict[str, Any], listing: str, seal: CursorSeal) -> str:
    """Where the next page of a one-key listing (`sump`) starts."""
    return seal.seal({"status": listing, "key": key})


def decode_cursor(cursor: str, listing: str, seal: CursorSeal, numbers: tuple[str, ...] = ()) -> dict[str, Any]:
    """The key a cursor carries. Every key attribute of the listed table and its indexes is a string,
    but those named in `numbers` (whole numbers): a sealed cursor holds nothing else, but the check
    stays, as a key DynamoDB cannot read would be a 5xx."""
    document = seal.open(cursor, listing)
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

    def encode(self, seal: CursorSeal) -> str:
        return seal.seal({"status": self.listing, "after": dict(self.after), "before": self.before})

    @classmethod
    def decode(cls, cursor: str, listing: str | None, statuses: list[str], seal: CursorSeal) -> TaskCursor:
        """The cursor a listing of `listing` (a status, None for all) handed out, each status's entry
        checked as an index entry of that status; anything else is a 400."""
        document = seal.open(cursor, listing)
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
