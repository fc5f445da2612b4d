"""x-sump through the gateway: list what it kept, show one message, and redrive it (docs/status.md,
"x-sump: inspect and redrive").

A redrive puts the failed envelope back at the actor where it failed, or at the one the caller names,
as a fresh start there: attempt 1, no deadline, the payload the failing actor was given (x-sink's
failure envelope carries it as `original_payload`) unless the caller sends a new one, and its redrive
count raised (`asya.headers.REDRIVE_HEADER`) so that its hops, children and kept results are new ones
rather than duplicates of the run that failed. Its task goes back from `failed` to `running`
(`TaskStore.reopen`). A message that never parsed is redriven from the fixed envelope the caller
sends. A redrive is done once per arrival in x-sump: asking again answers what was done.

A branch that a join gathers (`asya.joins`) is not redriven on its own: its failure was counted by its
join, which has gone on without it or failed. The join's own failure (`JoinFailed`) is redriven like
any other: the join actor runs again on the branches as they were gathered when it failed.

An entry belongs to its envelope's task (`task_id`, the root of a branch): a caller who is not an admin
is shown the entries of its own tasks, and another's is answered as an envelope x-sump never kept.
"""

from __future__ import annotations

from typing import Any

import orjson

from asya.envelope import EnvelopeError, Phase, parse_envelope, rfc3339, utc_now
from asya.fans import bucket_of
from asya.headers import FIRST_ATTEMPT_HEADER, REDRIVE_HEADER
from asya.joins import bound_for
from asya.reasons import Reason
from asya.results import result_prefix
from asya.sump import SumpFilter, SumpIndex
from asya.task_record import TERMINAL, TaskStatus, root_of, stealthy
from asya_gateway.cursors import decode_cursor, encode_cursor
from asya_gateway.kept import IN_REST, Carried
from asya_gateway.listing import moment
from asya_gateway.service import TaskService
from asya_gateway.task_error import TaskError
from asya_gateway.task_requests import client_headers
from asya_gateway.views import task_view

UNSET: Any = object()  # no new payload given: the one the failing actor was given
ERROR_PAYLOAD = {"error", "details", "original_payload"}  # what `routing.error_payload` makes of a payload


class Sump:
    def __init__(self, service: TaskService, index: SumpIndex) -> None:
        self.service = service
        self.index = index

    def list(
        self, *, reason: str | None, actor: str | None, since: str | None, limit: int, cursor: str | None
    ) -> dict[str, Any]:
        """x-sump's arrivals that pass the filters, newest first within a page, and the next page's cursor.
        Those of tasks the caller does not see are left out after the scan (their owners read in one
        batch), so a caller's page may be short while the cursor goes on."""
        where = SumpFilter(reason, actor, moment("since", since) if since is not None else None)
        start = decode_cursor(cursor, "sump", self.service.seal, numbers=("redrives",)) if cursor else None
        entries, last = self.index.page(where, limit, start)
        seen = self.service.ownership.seen_roots(_task_of(entry) for entry in entries)
        entries = [entry for entry in entries if _task_of(entry) in seen]
        return {"entries": entries, "next_cursor": encode_cursor(last, "sump", self.service.seal) if last else None}

    def show(self, envelope_id: str, carried: Carried = IN_REST) -> dict[str, Any]:
        """The last arrival of an envelope and the message as x-sump kept it (`kept`), or, when the
        answer (`carried` says how) could not hold it, `kept_url`: a link to it."""
        entry = self._entry(envelope_id)
        kept = self.service.kept.answer(self._kept_key(entry), carried)
        if kept is None:
            raise TaskError(409, f"x-sump's copy of {entry['id']!r} is gone (past the results' retention?)")
        if kept.link is not None:
            return {"entry": entry, "kept": None, "kept_url": kept.link}
        return {"entry": entry, "kept": kept.document}

    def redrive(
        self, envelope_id: str, *, to: str | None = None, payload: Any = UNSET, envelope: dict[str, Any] | None = None
    ) -> tuple[bool, dict[str, Any]]:
        """(whether this call redrove it, what was done): the envelope back in the mesh at its actor."""
        entry = self._entry(envelope_id)
        if entry.get("redriven_at"):
            return False, self._answer(entry, entry.get("redriven_to", ""), None)
        wire = self._fixed(entry, envelope) if envelope is not None else self._restarted(entry)
        join = bound_for(wire["headers"])
        if join is not None:
            raise TaskError(
                409,
                f"{entry['id']!r} is a branch the join {join.join!r} gathers: its failure was counted there, "
                f"and the join goes on (or failed) as {join.into!r}; redrive that one's failure, if it failed",
            )
        if to is not None:
            wire["route"]["curr"] = self.service.actor(to, "to")
        if payload is not UNSET:
            wire["payload"] = payload
        actor = wire["route"]["curr"]
        count = int(entry["redrives"]) + 1
        wire["headers"] = {
            **{key: value for key, value in wire["headers"].items() if key != FIRST_ATTEMPT_HEADER},
            REDRIVE_HEADER: count,
        }
        now = utc_now()
        wire["status"] = {
            "phase": Phase.PENDING.value,
            "actor": actor,
            "attempt": 1,
            "created_at": wire.get("status", {}).get("created_at") or rfc3339(now),
            "updated_at": rfc3339(now),
        }
        body = self.service.writable(wire, "the redriven envelope")
        task = None
        if not stealthy(wire["headers"]):
            task = self._reopen(wire, actor, count)
        self.service.send(actor, body)
        self.index.mark_redriven(entry, actor, now)
        return True, self._answer({**entry, "redriven_at": rfc3339(now), "redriven_to": actor}, actor, task)

    def _entry(self, envelope_id: str) -> dict[str, Any]:
        entry = self.index.latest(envelope_id)
        if entry is None or not self.service.ownership.seen_roots([_task_of(entry)]):
            raise TaskError(404, f"x-sump kept nothing for {envelope_id!r}")
        return entry

    def _kept_key(self, entry: dict[str, Any]) -> str:
        """Where x-sump kept the message: under the results prefix of its envelope, or it is refused."""
        key = str(entry.get("key", ""))
        own = result_prefix(self.service.settings.namespace, entry["id"])
        if self.service.settings.results_bucket is None or not key.startswith(own):
            raise TaskError(409, f"x-sump's copy of {entry['id']!r} is not where this gateway reads")
        return key

    def _kept(self, entry: dict[str, Any]) -> Any:
        """The message as x-sump kept it: the failure envelope, or the body as it came if it was not
        JSON (then a string)."""
        body = self.service.kept.read(self._kept_key(entry))
        if body is None:
            raise TaskError(409, f"x-sump's copy of {entry['id']!r} is gone (past the results' retention?)")
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            return body.decode("utf-8", "replace")

    def _restarted(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The envelope as the failing actor got it, from x-sump's copy."""
        kept = self._kept(entry)
        route = kept.get("route") if isinstance(kept, dict) else None
        if not isinstance(route, dict) or not route.get("curr") or entry.get("reason") in _NEVER_PARSED:
            raise TaskError(
                409,
                f"{entry['id']!r} reached x-sump as {entry.get('reason')} and cannot be sent as it was kept: "
                "send the fixed envelope ('envelope')",
            )
        wire = {key: value for key, value in kept.items() if key != "status"}
        wire["status"] = kept.get("status") if isinstance(kept.get("status"), dict) else {}
        wire["headers"] = dict(kept.get("headers") or {})
        payload = kept.get("payload")
        failure = wire["status"].get("reason") != Reason.REDRIVEN.value
        if failure and isinstance(payload, dict) and set(payload) == ERROR_PAYLOAD:
            wire["payload"] = payload["original_payload"]
        return wire

    def _fixed(self, entry: dict[str, Any], envelope: dict[str, Any]) -> dict[str, Any]:
        """The caller's fixed envelope, checked as an actor would check it, under the kept message's id."""
        if envelope.get("id", entry["id"]) != entry["id"]:
            raise TaskError(400, f"envelope.id: the fixed envelope keeps the id {entry['id']!r}")
        try:
            parsed = parse_envelope(orjson.dumps({**envelope, "id": entry["id"]}))
        except EnvelopeError as exc:
            raise TaskError(400, f"envelope: {exc}") from None
        except TypeError as exc:
            raise TaskError(422, f"envelope: cannot be written as JSON ({exc})") from None
        if not parsed.route.curr:
            raise TaskError(400, "envelope.route.curr: name the actor the envelope goes to")
        client_headers(parsed.headers)  # the mesh's own headers are the mesh's to set
        wire = parsed.to_dict()
        wire["route"] = dict(wire["route"])
        return wire

    def _reopen(self, wire: dict[str, Any], actor: str, count: int) -> dict[str, Any] | None:
        """The task back to `running`; refused if it ended otherwise since (succeeded, canceled)."""
        tasks = self.service.tasks
        item = tasks.get(wire["id"])
        if item is not None and item.get("status") in TERMINAL and item.get("status") != TaskStatus.FAILED:
            raise TaskError(409, f"task {wire['id']!r} has {item['status']} since; there is nothing to redrive")
        headers = wire["headers"]
        reopened = tasks.reopen(wire["id"], root_of(wire["id"], headers), actor, count, bucket_of(headers))
        return task_view(reopened) if reopened is not None else None

    @staticmethod
    def _answer(entry: dict[str, Any], to: str, task: dict[str, Any] | None) -> dict[str, Any]:
        answer = {"id": entry["id"], "redrives": int(entry["redrives"]) + 1, "to": to, "entry": entry}
        if task is not None:
            answer["task"] = task
        return answer


def _task_of(entry: dict[str, Any]) -> str:
    """The task an x-sump entry belongs to: its envelope's root."""
    return str(entry.get("task_id") or entry["id"])


# reasons for a message that was not an envelope: x-sump kept what could be kept, not a sendable envelope;
# an envelope of a newer version is kept whole, but only a release that reads that version can resend it
_NEVER_PARSED = (Reason.PARSE_ERROR.value, Reason.INVALID_ENVELOPE.value, Reason.NEWER_VERSION.value)
