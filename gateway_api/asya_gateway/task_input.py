"""What a task was started with, kept in its record so that people can read it and run the task again.

The gateway keeps a task's input in the one write that creates its record (no write of its own):

- an input of at most `INPUT_INLINE_BYTES` of JSON rides in the record as `input` (JSON text, as x-sink
  keeps a small result as `output`);
- a larger one travels to the first actor by claim check (`asya.claims`), even under the mesh's
  threshold, and the record keeps the reference (`input_ref`): the one S3 object serves the first hop
  and every later reading, no second copy.

Why 1 KB: every write after the creation (each hop's claim, the final status) pays a write unit per
started KB of the item, and a record without its input is about 0.5 KB. An input of up to 1 KB adds
at most one unit to each of those writes (4 for a plain 3-actor task, $2.50 per million tasks), less
than the $5.40 of the S3 PUT and GET a reference costs; at 2 KB the two are even for a 3-actor route,
and longer routes pay more writes. The bound also keeps the record far from DynamoDB's 400 KB item
limit, which the fields that grow after the creation need (the hops, up to 50 branch ids, an output
of up to 16 KB, an error's traceback).

The mesh keeps only this input and the task's result, not each hop's payload: that would cost a write
(or an S3 object) per hop. A hop's own log lines say what it did instead.

A task started another way has no kept input: one created before the gateway kept inputs, a
fan-out's branch (its input is a piece of its parent's output), or one whose first envelope an actor
or a client sent to a queue itself. Such a task can still be run again with an input given anew.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson

from asya.claims import REF_FIELD, Claims, PayloadUnreadableError
from asya.envelope import parse_rfc3339
from asya.task_record import TERMINAL
from asya_gateway.task_error import TaskError

INPUT_INLINE_BYTES = 1024
INPUT = "input"  # the record's field: the input as JSON text
INPUT_REF = "input_ref"  # the record's field: the claim check's reference to it
STARTED_ROUTE = "started_route"  # a task started by route, not flow: the route it was started on
RERUN_OF = "rerun_of"  # a task run again: the task it runs again
NOT_KEPT = (
    "its input was not kept: it was started before the gateway kept inputs, or not through the gateway "
    "(by an actor, or by a client sending to a queue)"
)


@dataclass(frozen=True, slots=True)
class Started:
    """A task's first envelope as it is sent, and what its record keeps of its input."""

    body: str
    kept: dict[str, Any]


def keep_input(envelope: dict[str, Any], body: str, claims: Claims | None) -> Started:
    """What the record of the task `envelope` starts keeps of its input, and the body to send (`body`,
    as the claim check left it, or with the payload moved to S3 when the record is to keep a link)."""
    payload = orjson.dumps(envelope.get("payload"))
    if len(payload) <= INPUT_INLINE_BYTES:
        return Started(body, {INPUT: payload.decode()})
    if claims is None:  # a gateway with no claims bucket keeps no large input
        return Started(body, {})
    sent = orjson.loads(body)
    if REF_FIELD in sent:  # already in S3, over the mesh's claim-check threshold
        return Started(body, {INPUT_REF: sent[REF_FIELD]})
    reference = claims.put(envelope)
    return Started(claims.slim(envelope, reference), {INPUT_REF: reference})


def input_view(item: dict[str, Any]) -> dict[str, Any]:
    """The record's input as a client sees it: `input` when it is in the record, `input_ref` (the link)
    when it is in S3 (`TaskService` reads it), `input_missing` saying why when it was not kept."""
    if isinstance(item.get(INPUT), str):
        return {INPUT: orjson.loads(item[INPUT])}
    if isinstance(item.get(INPUT_REF), dict):
        return {INPUT_REF: item[INPUT_REF]}
    return {"input_missing": why_not_kept(item)}


def without_input(view: dict[str, Any]) -> dict[str, Any]:
    """A view for a status event: the input left out. It never changes, and an event log item is billed
    per KB: with an input of up to 1 KB in it, a watched task's every event could cost two write units."""
    return {name: value for name, value in view.items() if name not in (INPUT, INPUT_REF, "input_missing")}


def why_not_kept(item: dict[str, Any]) -> str:
    parent = item.get("parent_id")
    if parent:
        return f"it is a branch of task {parent} (its input is a part of that task's work): run {parent} again"
    return NOT_KEPT


def read_input(item: dict[str, Any], claims: Claims | None) -> Any:
    """The input the task was started with, whole (a 409 saying why if it cannot be had)."""
    if isinstance(item.get(INPUT), str):
        return orjson.loads(item[INPUT])
    if not isinstance(item.get(INPUT_REF), dict):
        raise TaskError(409, f"task {item['id']} cannot be run again with the same input: {why_not_kept(item)}")
    if claims is None:
        raise TaskError(409, "this gateway has no claims bucket to read the task's input from")
    try:
        return claims.check_out(item[INPUT_REF])
    except PayloadUnreadableError as exc:
        raise TaskError(409, f"task {item['id']}'s input cannot be read any more: {exc}") from None


def rerun_request(item: dict[str, Any]) -> dict[str, Any]:
    """What `TaskService.create` needs to start the task `item` again (but its payload): its flow, or
    the route it was started on, and as long until its deadline as it had. A 409 if it has not ended
    (or is a branch: its parent runs it)."""
    task_id = item["id"]
    if item.get("status") not in TERMINAL:
        raise TaskError(409, f"task {task_id} is {item.get('status')}: only a task that has ended is run again")
    if item.get("parent_id"):
        raise TaskError(409, f"task {task_id} cannot be run again: {why_not_kept(item)}")
    if item.get("flow"):
        asked: dict[str, Any] = {"flow": item["flow"]}
    elif item.get(STARTED_ROUTE):
        asked = {"route": list(item[STARTED_ROUTE])}
    else:
        raise TaskError(409, f"task {task_id} cannot be run again: {NOT_KEPT}")
    created, deadline = parse_rfc3339(item.get("created_at")), parse_rfc3339(item.get("deadline_at"))
    if created is not None and deadline is not None:
        asked["timeout"] = max(1.0, (deadline - created) / dt.timedelta(seconds=1))
    return asked
