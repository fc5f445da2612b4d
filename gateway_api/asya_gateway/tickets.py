"""Follow tickets: how a browser follows a task (docs/callers.md, "Browsers").

A browser's `EventSource` sends no header of the page's: no bearer token, no API key, no SigV4
signature. So the task's owner (a page's server, a script: whoever holds a credential) asks for a
ticket with an authorized call (`POST /api/v1/mesh/{id}/ticket`), and the browser opens the stream the
answer names, `GET /follow/{id}?ticket=...`, the one route that takes a ticket in place of a
credential. A ticket

- opens that task's stream only: the task id is the associated data it is sealed with, so it opens
  for no other path;
- reads as its caller: it carries the caller it was handed to, so the stream shows that caller's task
  (and an admin's ticket any task) and nothing else; no other route and no other method reads it;
- lapses after `TICKET_SECONDS`: long enough for a page to open the stream and, on AWS, to reconnect
  after each bounded answer with `Last-Event-ID`, short enough that a ticket left in a browser's
  history or a proxy's log is soon worth nothing. A page that follows longer asks for a new one;
- is sealed (AES-GCM) under a key only the gateway holds, derived from the gateway's secret apart from
  the cursors' key (`asya_gateway.cursors.CursorKey`): a client can neither make one nor read the
  caller in it (an IAM ARN, a subject), which is why it is sealed rather than only signed.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import orjson

from asya_gateway.callers import Caller
from asya_gateway.cursors import NONCE_BYTES, CursorKey

TICKET_SECONDS = 300
KEY_INFO = b"asya-gateway-follow-ticket-v1"  # what the key derived from the gateway's secret is for
FOLLOW_PREFIX = "/follow/"  # `GET /follow/{id}?ticket=`: a top-level path, so the REST API's greedy proxy stays whole
MAX_TICKET = 1024  # a ticket as this module makes them is under 300 characters


class TicketRefusedError(Exception):
    """A ticket that does not open the stream asked for: `reason` is a stable word (`missing_ticket`,
    `invalid_ticket`, `expired_ticket`) and the message says more. Answered 401, as a credential refused."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class FollowTickets:
    """Hands out tickets and opens them, under the gateway's ticket key."""

    key: CursorKey
    clock: Callable[[], float] = field(default=time.time)

    def issue(self, task_id: str, caller: Caller) -> tuple[str, int]:
        """A ticket for `caller` to follow `task_id`, and when it lapses (seconds since the epoch)."""
        expires = int(self.clock()) + TICKET_SECONDS
        nonce = os.urandom(NONCE_BYTES)
        document = orjson.dumps({"o": caller.owner, "a": caller.admin, "e": expires})
        sealed = self.key.aead.encrypt(nonce, document, _bound_to(task_id))
        return base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("="), expires

    def open(self, ticket: str | None, task_id: str) -> Caller:
        """The caller a ticket for `task_id` was handed to; `TicketRefusedError` if there is no ticket,
        or it was made for another task, tampered with, not made here, or has lapsed."""
        from cryptography.exceptions import InvalidTag

        if not ticket:
            raise TicketRefusedError("missing_ticket", "this route takes a follow ticket (?ticket=)")
        try:
            raw = base64.urlsafe_b64decode(ticket.encode() + b"=" * (-len(ticket) % 4))
            opened = self.key.aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], _bound_to(task_id))
            document = orjson.loads(opened)
        except (binascii.Error, ValueError, InvalidTag):  # not base64, too short, another task's, tampered
            document = None
        if not _well_formed(document):
            raise TicketRefusedError("invalid_ticket", "the ticket is not one this gateway handed out for this task")
        if document["e"] <= self.clock():
            raise TicketRefusedError("expired_ticket", "the ticket has lapsed: ask for a new one")
        return Caller(owner=document["o"], admin=document["a"])


def follow_url(base: str, task_id: str, ticket: str) -> str:
    """Where a browser opens the task's stream with its ticket."""
    return f"{base}{FOLLOW_PREFIX}{quote(task_id, safe='')}?ticket={ticket}"


def followed_task(event: dict[str, Any]) -> str | None:
    """The task a proxy event follows with a ticket (`GET /follow/{id}`), None for any other request."""
    path = str(event.get("path") or "")
    if event.get("httpMethod") != "GET" or not path.startswith(FOLLOW_PREFIX):
        return None
    task_id = path[len(FOLLOW_PREFIX) :]
    return task_id if task_id and "/" not in task_id else None


def ticket_of(event: dict[str, Any]) -> str | None:
    """The event's `ticket` query parameter (its last value, as API Gateway's proxy event keeps it)."""
    ticket = (event.get("queryStringParameters") or {}).get("ticket")
    return ticket if isinstance(ticket, str) and len(ticket) <= MAX_TICKET else None


def _bound_to(task_id: str) -> bytes:
    return b"follow\x00" + task_id.encode("utf-8", "surrogatepass")


def _well_formed(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and set(document) == {"o", "a", "e"}
        and (document["o"] is None or isinstance(document["o"], str))
        and isinstance(document["a"], bool)
        and isinstance(document["e"], int)
    )
