"""What the sidecar tells the status gateway about each hop (docs/status.md), at the least cost.

Per SQS batch with branches in it: one `BatchGetItem` for the pre-flight check (is any branch's root
canceled? a task's own status is its claim's to check). Per hop,
by default one status write, made before the handler: the hop's claim (`claim_hop`, through `TaskStore.claim_hop`),
which reports the task `processing` at this actor and keeps a redelivery from running the hop again.
After the handler, nothing more for an output going on to an actor (its own hop's claim reports it);
a retry is reported `retrying`; x-sink and x-sump write the final status; fan-out children are
registered on the root task first, so the root cannot end without them.

`ASYA_STATUS_WRITES=every-point` adds the *received* point before the claim and `running` at the next
actor after the handler (three writes per hop). An envelope with `x-asya-mesh-status: off` is never
reported or checked (its hop is claimed in the idempotency table, if any).
A status write, a pre-flight read or a FLY event that fails (DynamoDB throttling included: batch calls
retry what it leaves unprocessed a bounded few times, `asya.dynamo`) is logged and counted, never
allowed to hold envelopes back, except a hop's claim (run unclaimed, a redelivery could run it twice
at once) and a branch registration (without it the root could end early): those records are left for
redelivery.

Each function builds its reporter once (`status_reporter`) and drives the batch's points with it
(pre-flight, before sending); the hop runner it lends it to drives each hop's (received, claim, FLY).
Without a tasks table (a function of a mesh that keeps none, a Spark job's hops) the reporter has no
store: nothing is tracked, checked or written, and no caller asks whether there is one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import orjson

from asya.config import SidecarConfig
from asya.dedup import Claim, HopClaim
from asya.envelope import Envelope, Phase
from asya.fans import bucket_of, with_bucket
from asya.flows import progress_floor
from asya.fly_channel import FLUSH_SECONDS, ChannelPublisher, channel_of, function_region
from asya.live import FLY, EventLog
from asya.routing import Decision, Kind
from asya.task_record import Report, progress_of, root_of, stealthy
from asya.task_store import TaskStore

if TYPE_CHECKING:
    from asya.claim_leases import ClaimLeases
    from asya.telemetry import Telemetry

LONGEST_INVOCATION_MS = 900_000  # Lambda's longest timeout: how long a claim made outside Lambda holds
NOTHING_KNOWN: Mapping[str, str] = MappingProxyType({})  # no pre-flight: no task known halted


@dataclass(slots=True)
class Registered:
    """What registering a batch's branches found: the records whose branches could not be registered
    (none of their envelopes may go), and the bucket of each branch registered in one (`asya.fans`)."""

    unregistered: set[str] = field(default_factory=set)
    buckets: dict[str, str] = field(default_factory=dict)

    def body(self, decision: Decision, body: str) -> str:
        """An output's body as it is sent: a branch counted in a bucket names it."""
        bucket = self.buckets.get(decision.task_id) if decision.branch else None
        return with_bucket(body, bucket) if bucket is not None else body


class StatusReporter:
    def __init__(
        self,
        store: TaskStore | None,
        events: EventLog | None,
        telemetry: Telemetry,
        every_point: bool = False,
        fly: ChannelPublisher | None = None,
    ) -> None:
        self.store = store
        self.events = events
        self.telemetry = telemetry
        self.every_point = every_point
        self.fly = fly

    def tracks(self, envelope: Envelope) -> bool:
        """Whether the envelope's task is reported, so its hop is claimed in its task record."""
        return self.store is not None and not stealthy(envelope.headers)

    def preflight(self, bodies: Iterable[str], *, claimed: bool = True) -> Mapping[str, str]:
        """The statuses a hop's claim cannot tell, read in one go before any handler runs: the root of
        each branch (a cancel reaches branches registered at any time through their root). A task's
        own status is checked by its hop's claim, which a paused or ended task refuses
        (`TaskStore.claim_hop`): the envelope is then sent on as paused or canceled, as it is here, and
        a batch of tasks without branches reads nothing before its claims. Each task's own status is
        read too when every point is written (its *received* point comes before the claim), or when
        the hops are not `claimed` in their task records (a Spark dispatcher's, claimed in its ledger)."""
        if self.store is None:
            return NOTHING_KNOWN
        ids: set[str] = set()
        for body in bodies:
            try:
                document = orjson.loads(body)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(document, dict) or not isinstance(document.get("id"), str):
                continue
            headers = document.get("headers")
            headers = headers if isinstance(headers, dict) else {}
            if stealthy(headers):
                continue
            task_id = document["id"]
            root_id = root_of(task_id, headers)
            ids.update(({task_id} if self.every_point or not claimed else set()) | ({root_id} - {task_id}))
        if not ids:
            return NOTHING_KNOWN
        try:  # advisory: the statuses DynamoDB leaves unread are logged, and those hops run
            return self.store.statuses(ids, unread=lambda error: self._failed("pre-flight check", error))
        except Exception as exc:  # noqa: BLE001 - the check is advisory: the next hop checks again
            self._failed("pre-flight check", exc)
            return NOTHING_KNOWN

    def write_received(self, envelope: Envelope, actor: str) -> None:
        """The *received* point, before the claim, written only when every point is asked for."""
        if self.every_point:
            self.write_processing(envelope, actor, "received")

    def claim_hop(
        self,
        envelope: Envelope,
        actor: str,
        remaining_ms: int | None,
        *,
        admitted_by: str | None = None,
        leases: ClaimLeases | None = None,
    ) -> HopClaim:
        """Claim the hop in the task record and report it `processing` at `actor`, in one write. The
        claim holds until this invocation ends (`remaining_ms`; unknown outside Lambda: Lambda's
        longest timeout). A write that fails raises: the record is redelivered rather than run
        unclaimed. `admitted_by`: the message of an envelope from outside the mesh (`asya.admission`).
        `leases`: a container consumer's; the claim then holds for one lease, renewed while the hop runs
        (`asya.claim_leases`)."""
        report = self._report_at(envelope, actor, "processing")
        if leases is not None:
            hold_ms = leases.hold_ms(remaining_ms)
        else:
            hold_ms = LONGEST_INVOCATION_MS if remaining_ms is None else remaining_ms
        held_until = int(time.time() * 1000) + hold_ms
        position = envelope.route.position
        found = self._tasks.claim_hop(report, position, held_until, admitted_by=admitted_by)
        self.telemetry.count("StatusWrites")
        if leases is not None and found.claim is Claim.NEW:
            leases.add(held_until, partial(self._tasks.renew_claim, report.task_id, position, report.attempt))
        return found

    def write_processing(
        self, envelope: Envelope, actor: str, phase: str = "processing", *, started: bool = False
    ) -> None:
        """A point written whatever the setting: for work that waits outside any queue for long (a
        Spark batch while its job runs), so that its task says where it is. `started`: the hop starts
        with it (no claim of its own), so the task's hop history gets it, in the same write."""
        if self.tracks(envelope):
            self._report(self._report_at(envelope, actor, phase), hop=envelope.route.position if started else None)

    def _report_at(self, envelope: Envelope, actor: str, phase: str) -> Report:
        return self._report_for(
            envelope.id,
            parent_id=envelope.parent_id,
            root_id=root_of(envelope.id, envelope.headers),
            actor=actor,
            route={"prev": envelope.route.prev, "curr": envelope.route.curr, "next": envelope.route.next},
            phase=phase,
            attempt=envelope.status.attempt if envelope.status else 1,
            bucket=bucket_of(envelope.headers),
            floor=progress_floor(envelope.headers),
        )

    def send_fly(self, envelope: Envelope, event: Any) -> None:
        """A FLY event goes to the task's watchers now (and the root's, for a branch); never to status.
        With the fast lane (`fly`) it is published on each task's channel by the background sender and
        not logged; otherwise it is appended to each task's live log. FLY is ephemeral (docs/actors.md):
        an event that cannot be published or logged is logged and counted (`StatusErrors`), and the hop
        goes on."""
        if self.events is None or stealthy(envelope.headers):
            return
        root = root_of(envelope.id, envelope.headers)
        data = {"id": envelope.id, "actor": envelope.route.curr, "data": event}
        targets = [envelope.id] if root == envelope.id else [envelope.id, root]
        if self.fly is not None:
            for task_id in targets:
                self.fly.publish(channel_of(task_id), data)
            return
        try:
            self.events.append((task_id, FLY, data) for task_id in targets)
        except Exception as exc:  # noqa: BLE001 - live events are best effort
            self._failed("fly event", exc)

    def flush_fly(self, left: float | None = None) -> None:
        """Before an invocation returns: the FLY events it yielded are sent (Lambda freezes the sender's
        thread in between), within the sender's bound and the `left` seconds of the invocation."""
        if self.fly is not None and not self.fly.flush(FLUSH_SECONDS if left is None else min(FLUSH_SECONDS, left)):
            self._failed("fly publish", TimeoutError("FLY events still unsent when the invocation returned"))

    def write_before_send(self, hops: Iterable[tuple[str, list[Decision]]]) -> Registered:
        """Register each hop's branches and write its status from its outputs' decisions (one list per
        input record)."""
        registered = Registered()
        if self.store is None:
            return registered
        for message_id, decisions in hops:
            tracked = [decision for decision in decisions if decision.tracked]
            if not tracked:
                continue
            try:
                branches = (d.task_id for d in tracked if d.branch and not d.joined)  # a join accounts for its own
                registered.buckets |= self.store.register_branches(tracked[0].root_id, branches)
            except Exception as exc:  # noqa: BLE001 - registration failed: send nothing, retry the hop
                self._failed("branch registration", exc)
                registered.unregistered.add(message_id)
                continue
            for decision in tracked:
                report = self._report_after(decision)
                if report is not None:
                    self._report(report)
        return registered

    def _report_after(self, decision: Decision) -> Report | None:
        if decision.kind in (Kind.SINK, Kind.SUMP):
            return None  # x-sink / x-sump write the final status
        if decision.kind is Kind.SELF and decision.phase is not Phase.RETRYING:
            return None  # waiting for its due time: nothing changed
        if decision.kind is Kind.ACTOR and not self.every_point:
            return None  # the next hop's claim reports it, in the same write
        return self._report_for(
            decision.task_id,
            parent_id=decision.parent_id,
            root_id=decision.root_id,
            actor=decision.curr,
            route={"prev": decision.prev, "curr": decision.curr, "next": decision.next},
            phase=decision.phase.value,
            attempt=decision.attempt,
        )

    @staticmethod
    def _report_for(
        task_id: str,
        *,
        parent_id: str | None,
        root_id: str,
        actor: str,
        route: dict[str, Any],
        phase: str,
        attempt: int,
        bucket: str | None = None,
        floor: float = 0.0,
    ) -> Report:
        return Report(
            task_id=task_id,
            actor=actor,
            route=route,
            phase=phase,
            progress=max(progress_of(route), floor),
            attempt=attempt,
            parent_id=parent_id,
            root_id=root_id if root_id != task_id else None,
            bucket=bucket,
        )

    def _report(self, report: Report, hop: int | None = None) -> None:
        try:
            self._tasks.report(report, hop=hop)
            self.telemetry.count("StatusWrites")
        except Exception as exc:  # noqa: BLE001 - status is reported best effort; envelopes still move
            self._failed("status write", exc)

    @property
    def _tasks(self) -> TaskStore:
        """The store, for what only a tracked task reaches (`tracks`)."""
        assert self.store is not None, "an untracked task is never written"
        return self.store

    def _failed(self, what: str, error: Exception) -> None:
        self.telemetry.count("StatusErrors")
        self.telemetry.log_failure(f"{what} failed", error_type=type(error).__name__, error=str(error))


def status_reporter(config: SidecarConfig, telemetry: Telemetry) -> StatusReporter:
    """The function's reporter: to its tasks table (and events table, for FLY, or the mesh's Event API
    when it has FLY's fast lane), if it has one."""
    events = EventLog(config.events_table) if config.events_table and config.tasks_table else None
    reporter = StatusReporter(
        TaskStore(config.tasks_table, config.task_ttl) if config.tasks_table else None,
        events,
        telemetry,
        every_point=config.status_writes == "every-point",
    )
    if events is not None and config.fly_domain:
        reporter.fly = ChannelPublisher(config.fly_domain, function_region(), reporter._failed)
    return reporter
