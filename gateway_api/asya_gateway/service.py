"""What the gateway does with tasks, whichever door the request came in by (REST, A2A cancel, MCP).

Creating a task writes its record first (`pending`) and then sends the first envelope, stamped with
`status` including `deadline_at`; a task that could not be sent is failed at once rather than left
pending. Everything else goes through `TaskStore`, whose conditional writes keep each task moving
forward only. What an answer carries beyond the record is `asya_gateway.answers`'s, the size rules of
what the gateway writes `asya_gateway.bodies`'s, events posted from outside `asya_gateway.reported`'s,
the checks of what a client asks (its route, headers, idempotency key) `asya_gateway.task_requests`'s.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from asya import names
from asya.claims import Claims
from asya.envelope import Phase, new_envelope, rfc3339, utc_now
from asya.headers import FLOW_HEADER
from asya.live import EventLog
from asya.results import result_key
from asya.seal import SEAL_ROOM, EnvelopeSeal
from asya.task_record import TaskStatus, stealthy
from asya.task_store import TaskStore
from asya.variables import MAX_MESSAGE_BYTES, WAIT_MAX_SECONDS
from asya.xray import Segments
from asya_gateway.answers import TaskAnswers
from asya_gateway.bodies import MAX_CLAIMED_BYTES, as_json, within
from asya_gateway.callers import OPERATOR, Caller
from asya_gateway.create_trace import record_create, start_trace
from asya_gateway.cursors import CursorKey
from asya_gateway.fly_feed import fly_feeds, fly_publisher
from asya_gateway.kept import IN_REST, Carried, KeptObjects
from asya_gateway.listing import TaskListing
from asya_gateway.ownership import Ownership
from asya_gateway.pause_fields import check_input
from asya_gateway.queues import MeshQueues
from asya_gateway.reported import apply_event
from asya_gateway.settings import Flow, GatewaySettings
from asya_gateway.sse import follow
from asya_gateway.task_error import TaskError
from asya_gateway.task_input import RERUN_OF, STARTED_ROUTE, keep_input, read_input, rerun_request
from asya_gateway.task_requests import IDEMPOTENCY_KEY, checked_route, client_headers, idempotent_task_id
from asya_gateway.views import task_view

if TYPE_CHECKING:
    from types_boto3_sqs.client import SQSClient

_log = logging.getLogger(__name__)
RESUME_STATUS_BYTES = 256
WAIT_FIRST_POLL_SECONDS = 0.05  # then doubling, up to
WAIT_POLL_SECONDS = 1.0
UNSET: Any = object()  # a re-run given no payload: the one the task was started with


@dataclass(frozen=True, slots=True)
class Created:
    task_id: str
    tracked: bool
    task: dict[str, Any] | None
    replayed: bool = False  # made by an earlier create with the same idempotency key


class TaskService:
    """Every door's tasks, as one caller sees them (`as_caller`); built for no caller, the operator's:
    every task."""

    def __init__(
        self,
        settings: GatewaySettings,
        tasks: TaskStore | None = None,
        events: EventLog | None = None,
        sqs: SQSClient | None = None,
        s3: Any = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.sleep = sleep  # how a wait for a task's end passes the time between reads (`wait`)
        self.clock = clock
        self.tasks = tasks or TaskStore(settings.tasks_table, settings.task_ttl)
        self.events = events or EventLog(settings.events_table)
        self.feeds = fly_feeds(settings)
        self.fly = fly_publisher(settings)  # FLY events posted from outside the mesh
        self.queues = MeshQueues(sqs, settings.namespace, settings.queue_name, EnvelopeSeal(settings.seal_secret))
        self.kept = KeptObjects(settings.results_bucket, s3)
        self.caller = OPERATOR
        self.ownership = Ownership(self.tasks, OPERATOR)
        self.cursor_key = CursorKey(settings.cursor_secret)
        self.seal = self.cursor_key.bound(OPERATOR)  # the caller's cursors, sealed for it alone
        self.listing = TaskListing(self.tasks, self.ownership, self.seal)
        bucket = settings.claim_bucket
        self.claims = Claims(bucket, settings.namespace, settings.claim_check_bytes, s3) if bucket else None
        self.claimed = KeptObjects(bucket, s3)  # the claim checks, as answers carry them (a task's input)
        self.answers = TaskAnswers(settings, self.tasks, self.kept, self.claimed, self.claims)
        self.segments = Segments.from_env() if settings.tracing else None  # the creates' root spans

    @property
    def sqs(self) -> SQSClient:
        return self.queues.client

    def as_caller(self, caller: Caller) -> TaskService:
        """This service as `caller` sees it: its tasks are those it creates, and a task it may not see
        is answered as unknown. The clients and what was found with them are shared, not made again."""
        bound = copy.copy(self)
        bound.caller = caller
        bound.ownership = Ownership(self.tasks, caller)
        bound.seal = self.cursor_key.bound(caller)
        bound.listing = TaskListing(self.tasks, bound.ownership, bound.seal)
        return bound

    def _task(self, task_id: str) -> dict[str, Any]:
        """The task's record, if the caller sees it. A task it may not see is a task unknown, with the
        same answer, so that a caller cannot tell another's task ids from ids never made."""
        item = self.tasks.get(task_id)
        if item is None or not self.ownership.sees(item):
            raise TaskError(404, f"no task {task_id!r}")
        return item

    # -- creating -------------------------------------------------------------------------------------

    def create(
        self,
        *,
        payload: Any,
        flow: str | None = None,
        route: list[str] | None = None,
        headers: dict[str, Any] | None = None,
        timeout: float | None = None,
        idempotency_key: str | None = None,
        rerun_of: str | None = None,
        named: Callable[[str], None] | None = None,
    ) -> Created:
        """A new task, sent to its first actor. With `idempotency_key` the task's id is made from the
        key, so a retried create (its answer lost, say) finds the task the first one made and answers
        with it instead of starting a second; one that asks for something else is a 422. A task never
        picked up yet is sent again (its first actor's claim keeps a copy from running twice), in case
        the first create ended before sending it. The key is free again once the task's record expires.
        The record keeps the task's input (`asya_gateway.task_input`) and, for a task run again, the task
        it runs again (`rerun_of`). `named` is told the task's id before anything is sent: a stream that
        follows the task subscribes to its FLY channel then, so it misses none of its FLY events."""
        chosen = self._flow(flow) if flow is not None else None
        actors = chosen.route if chosen is not None else checked_route(route)
        if chosen is not None:
            self.validate(chosen, payload)
        headers = client_headers(headers or {})
        given = payload  # the task's input, as kept for a re-run: a program's first edits change what is sent
        if chosen is not None and chosen.program is not None:
            actors, headers[FLOW_HEADER], payload = self._program_start(chosen, payload)
        for actor in actors if chosen is None else actors[:1]:  # a flow's actors were checked when it was deployed
            self.queues.url(actor)
        now = utc_now()
        seconds = timeout if timeout is not None else chosen.timeout if chosen is not None else None
        deadline = rfc3339(now + dt.timedelta(seconds=seconds)) if seconds else None
        tracked = not stealthy(headers)
        digest = None
        if idempotency_key is not None:
            if not IDEMPOTENCY_KEY.match(idempotency_key):
                raise TaskError(400, "Idempotency-Key: 1 to 255 printable ASCII characters, no spaces")
            if not tracked:
                raise TaskError(400, "Idempotency-Key: a task with x-asya-mesh-status: off has no record to keep it")
            asked = {"route": actors, "flow": flow, "payload": given, "headers": headers, "timeout": timeout}
            digest = hashlib.sha256(orjson.dumps(asked, option=orjson.OPT_SORT_KEYS)).hexdigest()
        task_id = self._new_id(idempotency_key, named)  # the trace after the digest: a retry's has a new span
        asked_at, span = time.time(), start_trace(headers, flow, self.segments is not None)
        status = {"phase": Phase.PENDING.value, "actor": actors[0], "attempt": 1}
        status.update(created_at=rfc3339(now), updated_at=rfc3339(now))
        if deadline:
            status["deadline_at"] = deadline
        envelope = new_envelope(task_id, actors, payload, headers, status)
        body = self.writable(envelope, "the task's envelope")
        written: dict[str, Any] | None = None
        if tracked:
            record: dict[str, Any] = {
                "id": task_id,
                "route": envelope["route"],
                "actor": actors[0],
                "phase": Phase.PENDING,
            }
            record.update({"flow": flow, "deadline_at": deadline, "attempt": 1, "request_digest": digest})
            record.update({STARTED_ROUTE: None if flow else actors, RERUN_OF: rerun_of, **self.caller.creator()})
            record["program_version"] = chosen.program["version"] if chosen and chosen.program else None
            body, kept = self._keep_input(envelope, body, given)
            record.update(kept)
            written = self.tasks.create({key: value for key, value in record.items() if value is not None})
            if written is None and digest is not None:
                return self._created_before(task_id, digest, envelope, actors[0], idempotency_key or "")
            if written is None:  # a fresh uuid4 taken: never seen, but never a second task under one id
                raise TaskError(409, f"task id {task_id} is taken; create the task again")
        try:
            self.queues.send(actors[0], body)
        except Exception as exc:
            if tracked:
                failure = {"reason": "NotSent", "error": {"message": str(exc)}}
                self.tasks.finish(task_id, task_id, TaskStatus.FAILED, failure)
            raise TaskError(503, f"the task could not be sent to {actors[0]!r}: {exc}") from exc
        record_create(self.segments, span, task_id, flow, asked_at)
        return Created(task_id, tracked, task_view(written) if written is not None else None)

    def _keep_input(self, envelope: dict[str, Any], body: str, given: Any) -> tuple[str, dict[str, Any]]:
        """The body to send and what the record keeps of the task's input (`keep_input`): the input as
        given, even when a program's first edits changed the payload sent, so a re-run starts from it
        (and does not make those edits twice)."""
        started = keep_input(envelope, body, self.claims)
        if given is envelope["payload"]:
            return started.body, started.kept
        original = {**envelope, "payload": given}
        return started.body, keep_input(original, self.writable(original, "the task's input"), self.claims).kept

    def _new_id(self, idempotency_key: str | None, named: Callable[[str], None] | None) -> str:
        """A new task's id: a fresh one, or the one the caller's key makes (the same on every retry);
        `named` is told it."""
        if idempotency_key is None:
            task_id = str(uuid.uuid4())
        else:
            task_id = idempotent_task_id(self.settings.namespace, idempotency_key, self.caller.owner)
        if named is not None:
            named(task_id)
        return task_id

    def _created_before(self, task_id: str, digest: str, envelope: dict[str, Any], first: str, key: str) -> Created:
        """A create whose key made this task before: the same request answers with the task; if its
        first actor has not picked it up yet, it is sent again, as it was first (its deadline kept)."""
        existing = self.tasks.get(task_id)
        if existing is None:  # created and expired between the two reads: the key is free again
            raise TaskError(409, f"Idempotency-Key {key!r}: its task just expired; create the task again")
        if existing.get("request_digest") != digest:
            raise TaskError(422, f"Idempotency-Key {key!r} was used for another request (task {task_id})")
        if existing.get("status") == TaskStatus.PENDING:
            status = {**envelope["status"], "created_at": existing.get("created_at", envelope["status"]["created_at"])}
            status.pop("deadline_at", None)
            if existing.get("deadline_at"):
                status["deadline_at"] = existing["deadline_at"]
            self.queues.send(first, self.writable({**envelope, "status": status}, "the task's envelope"))
        return Created(task_id, True, task_view(existing), replayed=True)

    @staticmethod
    def _program_start(flow: Flow, payload: Any) -> tuple[list[str], dict[str, Any], Any]:
        """A program flow's route, flow header and payload (as its first edits leave it) for this
        input (`asya.flows.start`); a condition or an edit it cannot compute on the input refuses the
        task. The program evaluator is imported here, by the
        first task of a program flow: a gateway's cold start does without it."""
        from asya.flows import FlowError, start

        assert flow.program is not None
        try:
            return start(flow.program, payload)
        except FlowError as exc:  # an input a client chose: a 400 (a hostile one too), logged for the mesh's owner
            refusal = f"flow {flow.name!r} cannot start on this payload: {exc}"
            _log.warning(refusal)
            raise TaskError(400, refusal) from None

    def validate(self, flow: Flow, payload: Any) -> None:
        """The flow's input schema decides what a payload may be (REST and MCP alike)."""
        import fastjsonschema

        try:
            self.settings.validators[flow.name](payload)
        except fastjsonschema.JsonSchemaValueException as exc:
            mismatch = f"payload does not match the input schema of flow {flow.name!r}: {exc.message}"
            raise TaskError(400, mismatch) from None

    def _flow(self, name: str) -> Flow:
        flow = self.settings.flows.get(name)
        if flow is None:
            known = ", ".join(sorted(self.settings.flows)) or "none"
            raise TaskError(400, f"unknown flow {name!r} (known flows: {known})")
        return flow

    def actor(self, name: str, field: str) -> str:
        """An actor a client names (`field` says where) that a task may be sent to: a deployed one, not
        the crew's (x-pause aside)."""
        checked_route([name], field)
        self.queues.url(name)
        return name

    def writable(self, envelope: dict[str, Any], what: str, room: int = 0) -> str:
        """The envelope as the body SQS will carry, its payload in S3 when it is over the mesh's
        claim-check threshold (`asya.claims`); a 4xx if it never could be sent. `room`: bytes to leave
        for what is added before it is sent."""
        limit = MAX_MESSAGE_BYTES.default - room - (SEAL_ROOM if self.queues.seal.enabled else 0)
        if self.claims is None:
            return as_json(envelope, limit, what)
        body = self.claims.check_in(envelope, as_json(envelope, MAX_CLAIMED_BYTES, what))
        return within(body, limit, what)

    def send(self, actor: str, body: str) -> None:
        self.queues.send_or_503(actor, body)

    # -- reading --------------------------------------------------------------------------------------

    def view(self, task_id: str) -> dict[str, Any]:
        item = self._task(task_id)
        return self.answers.explained(self.answers.with_input(task_view(item)))

    def follow(
        self, task_id: str, cursor: str | None, *, keepalive_seconds: float, max_seconds: float | None
    ) -> Iterator[str] | None:
        """The task's events as SSE chunks (`asya_gateway.sse.follow`), None if it is unknown. A caller
        who is not an admin has the task read first, so that another's task is never marked watched."""
        if not self.caller.admin:
            self._task(task_id)
        return follow(
            self.tasks,
            self.events,
            task_id,
            cursor,
            keepalive_seconds=keepalive_seconds,
            max_seconds=max_seconds,
            feeds=self.feeds,
        )

    def flows(self) -> dict[str, Any]:
        """The mesh's flows: route, description, timeout and input schema of each."""
        return {"flows": {name: flow.public() for name, flow in self.settings.flows.items()}}

    def wait(
        self, task_id: str, seconds: float, carried: Carried = IN_REST, *, paused: bool = False
    ) -> tuple[bool, dict[str, Any]]:
        """(ended, the task) once the task is terminal or after `seconds`, whichever is first; with
        `paused`, a task waiting for a person ends the wait too (A2A's `input-required`). An ended
        task's result is in the view as `output`, read from S3 when x-sink kept it there, or, when the
        answer (`carried` says how) could not hold it, as `output_url`, a link to it.

        It reads the task record (strongly consistent), first after 50 ms and then twice as late each
        time up to once a second: about 30 reads for a wait of 25 s, at 1 RRU each. Following the event
        log instead would cost a write for the watch mark and one per status change on top."""
        deadline = self.clock() + min(seconds, WAIT_MAX_SECONDS)
        pause = WAIT_FIRST_POLL_SECONDS
        item = self._task(task_id)  # whose it is is asked once: a task's owner never changes
        while True:
            view = task_view(item)
            left = deadline - self.clock()
            if view["terminal"]:  # the input from S3 is not added: with the output, it could pass 6 MB
                return True, self.answers.explained(self.answers.with_output(view, carried))
            if paused and view["status"] == TaskStatus.PAUSED:
                return True, view
            if left <= 0:
                return False, view
            self.sleep(min(pause, left))
            pause = min(pause * 2, WAIT_POLL_SECONDS)
            read = self.tasks.get(task_id)
            if read is None:
                raise TaskError(404, f"no task {task_id!r}")
            item = read

    # -- changing -------------------------------------------------------------------------------------

    def rerun(self, task_id: str, payload: Any = UNSET, idempotency_key: str | None = None) -> Created:
        """A new task of the ended task's flow (or the route it was started on), with the input it was
        started with or `payload`, recording which task it runs again; `idempotency_key` as for
        `create` (a second click, a retried request: one new task). The new task is the caller's, as
        any task it creates (an admin's re-run of another's task is the admin's)."""
        item = self._task(task_id)
        asked = rerun_request(item)
        given = read_input(item, self.claims) if payload is UNSET else payload
        return self.create(payload=given, rerun_of=task_id, idempotency_key=idempotency_key, **asked)

    def cancel(self, task_id: str) -> dict[str, Any]:
        """Cancel the task and its branches; a caller who is not an admin has its record read first
        (the cancel reads it anyway, so it is given that read)."""
        seen = None if self.caller.admin else self._task(task_id)
        item = self.tasks.cancel(task_id, seen)
        if item is None:
            raise TaskError(404, f"no task {task_id!r}")
        return task_view(item)

    def resume(self, task_id: str, human_input: dict[str, Any]) -> dict[str, Any]:
        """Merge the human input, checked against the fields its pause asked for, into the kept
        envelope's payload and continue through x-resume."""
        item = self._task(task_id)
        if item.get("status") != TaskStatus.PAUSED:
            raise TaskError(409, f"task {task_id!r} is {item.get('status')}, not paused")
        check_input(item.get("pause"), human_input)
        envelope = self._paused_envelope(task_id)
        payload = envelope.get("payload")
        envelope["payload"] = (
            {**payload, **human_input} if isinstance(payload, dict) else {"value": payload, **human_input}
        )
        # Refused while the task is still paused; the room left is for the status fields set below.
        self.writable(envelope, "the resumed envelope", room=RESUME_STATUS_BYTES)
        resumed = self.tasks.resume(item, utc_now())
        if resumed is None:
            raise TaskError(409, f"task {task_id!r} is no longer paused")
        status = envelope.setdefault("status", {})
        status.update(phase=Phase.PROCESSING.value, updated_at=rfc3339(utc_now()))
        if resumed.get("deadline_at"):
            status["deadline_at"] = resumed["deadline_at"]
        self.send(names.RESUME, self.writable(envelope, "the resumed envelope"))
        return task_view(resumed)

    def _paused_envelope(self, task_id: str) -> dict[str, Any]:
        if self.settings.results_bucket is None:
            raise TaskError(409, "this gateway has no results bucket to resume from")
        body = self.kept.read(result_key(self.settings.namespace, task_id, "pause"))
        if body is None:
            raise TaskError(409, f"task {task_id!r} is paused but its envelope is not kept yet; retry")
        document: dict[str, Any] = orjson.loads(body)
        return document

    def post_event(self, task_id: str, event: dict[str, Any]) -> bool:
        """A status or fly event from an actor outside the mesh (`asya_gateway.reported`); whether it
        changed anything."""
        return apply_event(self.tasks, self.events, self._task(task_id), event, self.fly)
