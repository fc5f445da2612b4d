"""One hop: what the sidecar does with one SQS record, up to (not including) sending.

The result is a `HopPlan`: the envelopes to send and how to settle the record afterwards. Every
outcome of docs/routing.md is decided here, in the order the checks must run: parse, route, due time,
pre-flight (canceled or paused), duplicate, deadline, handler, resiliency.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from asya import flows, routing, state_hop
from asya.abi import EnvelopeState
from asya.actor_extras import actor_state_of, admission_problem_of, gathering_of
from asya.claim_leases import ClaimLeases
from asya.claims import REF_FIELD, referenced, unrestorable
from asya.config import SidecarConfig
from asya.dedup import DUPLICATE_HOP, Claim, Hop, HopClaim, HopLedger
from asya.envelope import Envelope, EnvelopeError, Phase, parse_envelope, rfc3339, utc_now
from asya.fans import fan_too_wide
from asya.handler import Handler, discard_event_loop, invoke
from asya.headers import FIRST_ATTEMPT_HEADER, FLOW_HEADER, JOIN_HEADER, JOINED_HEADER
from asya.hop_bodies import HopBodies, carries_error_payload, utf8_size
from asya.hop_logging import HopNames
from asya.hop_outputs import flow_catches, flow_failed, handler_failure, sent_on
from asya.joins import JoinHeaderError, alone, first_join, gathered_here, innermost
from asya.outcomes import HopOutcome
from asya.reasons import Reason
from asya.reporting import NOTHING_KNOWN, StatusReporter
from asya.routing import Outbound, error_details
from asya.task_record import HALTING, TaskStatus, root_of, stealthy
from asya.telemetry import Telemetry
from asya.timeouts import TimedOut, run_with_timeout
from asya.tracecontext import Span, enter_span

# reached on every hop, so once here: an Enum's member costs 0.1 µs to reach
_BYTES, _NEW = MetricUnit.Bytes, Claim.NEW


@dataclass(slots=True)
class HopPlan:
    """The outcome of one record: envelopes to send, or an instruction to let SQS redeliver it."""

    message_id: str
    envelope: Envelope | None = None  # parsed: its status is reported
    outbound: list[Outbound] = field(default_factory=list)
    bodies: list[str] = field(default_factory=list)
    key: dict[str, Any] | None = None
    redeliver: bool = False
    follows: str | None = None  # in-batch duplicate: shares the fate of this record
    held_until: int | None = None  # another delivery runs this hop: its claim lapses then (epoch ms)
    foreign: bool = False  # no seal: a new task from outside the mesh, its record made by its claim
    span: Span | None = None  # the hop's place in its task's trace (`asya.tracecontext`)


class HopRunner:
    def __init__(
        self,
        config: SidecarConfig,
        handler: Handler,
        ledger: HopLedger,
        telemetry: Telemetry,
        reporter: StatusReporter | None = None,
        *,
        has_queue: Callable[[str], bool] | None = None,
    ) -> None:
        self.config = config
        self.has_queue = has_queue  # None: outputs are not sent from here (a Spark job), nothing to check
        self.handler = handler
        self.ledger = ledger
        self.telemetry = telemetry
        self.reporter = reporter or StatusReporter(None, None, telemetry)  # a job's hops: nothing reported
        self.claims = config.claims()
        self.bodies = HopBodies(config.actor, config.body_limit, self.claims)
        self.gathering = gathering_of(config, self.reporter)
        self.state = actor_state_of(config)
        self.leases: ClaimLeases | None = None  # the batch's, from a container consumer's clock (`asya.claim_leases`)

    def run(
        self,
        message_id: str,
        body: str,
        remaining_ms: int | None,
        *,
        known: Mapping[str, str] = NOTHING_KNOWN,
        handler: Handler | None = None,
        sealed: bool = True,
    ) -> HopPlan:
        """One record. `known`: the pre-flight's task statuses for its batch (canceled, paused);
        `handler` stands in for the configured one (a DataFrame job replays its rows through it);
        `sealed`: whether the record carries the mesh's seal (`asya.seal`): one that does not came from
        outside the mesh, and starts a task or is refused (`asya.admission`) without running."""
        telemetry = self.telemetry
        started = time.perf_counter()
        now = utc_now()
        telemetry.count("MessagesReceived")
        telemetry.observe("EnvelopeSize", _BYTES, utf8_size(body))
        plan = HopPlan(message_id)
        try:
            envelope = parse_envelope(body)
        except EnvelopeError as exc:
            plan.outbound.append(
                routing.raw_to_sump(
                    exc.raw,
                    message_id,
                    self.config.actor,
                    reason=exc.reason,
                    details=error_details(None, str(exc)),
                    now=now,
                    foreign=not sealed,  # from outside the mesh: the id it names is not taken for its task
                )
            )
            return self._finish(plan, None, HopOutcome.SUMPED, started, body)
        plan.envelope = envelope
        plan.span = enter_span(envelope.headers, restart=telemetry.segments is not None)
        task_id = root_of(envelope.id, envelope.headers)
        # on every log line of the hop; the envelope's id is the logger's correlation id from here on
        with HopNames(envelope.id, task_id, self.config.actor, telemetry.logger):
            problem = None if sealed else admission_problem_of(envelope)
            if problem is not None:
                return self._finish(plan, envelope, self._refuse(plan, envelope, problem, now), started, body)
            plan.foreign = not sealed
            used = handler or self.handler
            return self._run_envelope(
                envelope, plan, now, remaining_ms, started=started, body=body, known=known, handler=used
            )

    def _refuse(self, plan: HopPlan, envelope: Envelope, problem: str, now: dt.datetime) -> HopOutcome:
        """An envelope from outside the mesh that cannot start a task (`asya.admission`): x-sump, naming
        no task, before anything else is done with it."""
        from asya.admission import refused  # only an envelope from outside the mesh needs it

        self.telemetry.log_failure("an envelope from outside the mesh is refused", error_message=problem)
        plan.outbound.append(refused(envelope, plan.message_id, self.config.actor, problem, now))
        return HopOutcome.REFUSED

    def _run_envelope(
        self,
        envelope: Envelope,
        plan: HopPlan,
        now: dt.datetime,
        remaining_ms: int | None,
        *,
        started: float,
        body: str,
        known: Mapping[str, str],
        handler: Handler,
    ) -> HopPlan:
        """The rest of `run`, for an envelope that parsed, while the hop's names are on its log lines."""
        if (self.gathering is not None or self.config.joined_by) and JOIN_HEADER in envelope.headers:
            from asya.join_table import JoinMismatchError  # a join's or a source's: see `gathering_of`

            try:  # checked whole: a source stacks its frames on it, a join gathers by it
                frame = innermost(envelope.headers, self.config.actor)
                if frame is not None and self.gathering is not None and gathered_here(envelope):
                    outcome, outbound = self.gathering.arrive(envelope, frame, now)
                    plan.outbound.extend(outbound)
                    return self._finish(plan, envelope, outcome, started, body)
            except (JoinHeaderError, JoinMismatchError) as exc:
                plan.outbound.append(self._unjoinable(envelope, exc, now))
                return self._finish(plan, envelope, HopOutcome.SUMPED, started, body)
        if referenced(envelope):
            unreadable = self._restore(envelope)
            if unreadable is not None:
                plan.outbound.append(
                    routing.to_sump(envelope, self.config.actor, Reason.PAYLOAD_UNREADABLE, unreadable, now)
                )
                return self._finish(plan, envelope, HopOutcome.SUMPED, started, body)
        if self.gathering is not None and JOINED_HEADER not in envelope.headers:
            alone(envelope)  # a join of one: its handler gets a list all the same
        outcome = self._route(envelope, plan, now, remaining_ms, known=known, handler=handler)
        outcome = self._check_destinations(plan, envelope, outcome)
        return self._finish(plan, envelope, outcome, started, body)

    def _unjoinable(self, envelope: Envelope, error: Exception, now: dt.datetime) -> Outbound:
        """x-sump for an envelope whose join header cannot be followed, without the header: sent on
        with it, x-sump would hand it back to this join as an ending, and round it would go."""
        envelope.headers = {name: value for name, value in envelope.headers.items() if name != JOIN_HEADER}
        return routing.to_sump(envelope, self.config.actor, Reason.INVALID_ENVELOPE, error_details(error), now)

    def _restore(self, envelope: Envelope) -> dict[str, Any] | None:
        """The payload back from S3 (`asya.claims`); why not, if it never can be."""
        without = (
            f"{REF_FIELD}: the payload cannot be read here (no ASYA_CLAIM_BUCKET, or a "
            "Spark actor's dispatcher could not read it)"
        )
        problem = unrestorable(envelope, self.claims, without)
        return None if problem is None else error_details(problem)

    def _route(
        self,
        envelope: Envelope,
        plan: HopPlan,
        now: dt.datetime,
        remaining_ms: int | None,
        *,
        known: Mapping[str, str],
        handler: Handler,
    ) -> HopOutcome:
        actor = self.config.actor
        if envelope.route.curr != actor:
            message = f"route.curr is {envelope.route.curr!r} but this actor is {actor!r}"
            plan.outbound.append(
                routing.to_sump(envelope, actor, Reason.ROUTE_MISMATCH, error_details(None, message), now)
            )
            return HopOutcome.SUMPED
        if FLOW_HEADER in envelope.headers:  # only a task of a flow program has a program to check
            try:  # a corrupt or foreign header is the envelope's fault, found before its handler runs
                flows.FlowPlace.of(envelope.headers, self.config.flow_versions)
            except flows.FlowHeaderError as exc:
                self.telemetry.log_failure(
                    "the flow header is refused", error_message=str(exc), reason=exc.reason.value
                )
                plan.outbound.append(routing.to_sump(envelope, actor, exc.reason, error_details(exc), now))
                return HopOutcome.SUMPED
        early = routing.defer_if_early(envelope, actor, now)
        if early is not None:  # a lap, not a hop: it goes round as it came, the trace's span untaken
            if plan.span is not None:
                plan.span.restore(early.wire["headers"])
            plan.outbound.append(early)
            return HopOutcome.DEFERRED
        halted = _halted(envelope, known)
        if halted is not None:
            plan.outbound.append(routing.halt(envelope, actor, halted, now))
            return HopOutcome(halted.value)
        lambda_left = None if remaining_ms is None else remaining_ms / 1000 - self.config.lambda_margin
        if lambda_left is not None and lambda_left <= 0:
            plan.redeliver = True  # not started: too little invocation time left to run it safely
            return HopOutcome.REDELIVERED
        key = Hop.key_of(envelope)
        self.reporter.write_received(envelope, actor)
        found = self._claim(envelope, key, plan, remaining_ms)
        if found.claim is not _NEW:  # one comparison on the usual path
            return self._unclaimed(found, envelope, key, plan, now)
        plan.key = key
        deadline = envelope.status.deadline_at if envelope.status else None
        if deadline is not None and deadline <= now:
            details = error_details(None, f"deadline {rfc3339(deadline)} passed before {actor} could start")
            plan.outbound.append(routing.fail(envelope, actor, reason=Reason.TIMEOUT, details=details, now=now))
            return HopOutcome.FAILED
        envelope.headers.setdefault(FIRST_ATTEMPT_HEADER, rfc3339(now))
        limit = _tightest(
            self.config.actor_timeout,
            None if deadline is None else (deadline - now).total_seconds(),
            lambda_left,
        )
        ends_at = None if lambda_left is None else time.monotonic() + lambda_left
        return self._call_handler(envelope, plan, now, limit, handler=handler, ends_at=ends_at)

    def _call_handler(
        self,
        envelope: Envelope,
        plan: HopPlan,
        now: dt.datetime,
        limit: float | None,
        *,
        handler: Handler,
        ends_at: float | None,
    ) -> HopOutcome:
        """`ends_at`: when, on the monotonic clock, this invocation must have sent its outputs."""
        actor = self.config.actor
        # the handler's view shares the envelope's route and headers, not copies: a verb that changes
        # them gives the view new ones (`EnvelopeState._write`), and each output copies them (`capture`)
        state = EnvelopeState(
            id=envelope.id,
            parent_id=envelope.parent_id,
            prev=envelope.route.prev,
            curr=envelope.route.curr,
            next=envelope.route.next,
            headers=envelope.headers,
            status=envelope.status_wire(),
            payload=envelope.payload,
            on_fly=lambda event: self._on_fly(envelope, event),
        )
        handler_started = time.perf_counter()
        if self.state is not None and plan.key is not None:  # its state writes carry the hop (`asya.state_hop`)
            state_hop.begin(plan.key, self.state)
        try:
            output = run_with_timeout(lambda: invoke(handler, state, self.config.handler_mode), limit)
        except TimedOut as exc:
            discard_event_loop()
            details = error_details(exc)
            taken = flow_catches(envelope, details, Reason.HANDLER_TIMEOUT, actor, now, telemetry=self.telemetry)
            if taken is not None:
                plan.outbound.extend(taken)
                return HopOutcome.FORWARDED
            plan.outbound.append(routing.to_sump(envelope, actor, Reason.HANDLER_TIMEOUT, details, now))
            return HopOutcome.SUMPED
        except Exception as exc:  # noqa: BLE001 - any handler error goes through the resiliency policy
            return self._on_handler_error(envelope, plan, exc)
        except KeyboardInterrupt:
            raise  # the operator stopping the process, not the handler's outcome: the record is redelivered
        except BaseException as exc:  # noqa: BLE001 - sys.exit, GeneratorExit, CancelledError, a user's own
            plan.outbound.append(routing.to_sump(envelope, actor, Reason.RUNTIME_CRASH, error_details(exc), now))
            return HopOutcome.SUMPED
        finally:
            state_hop.end()
            self.telemetry.took("HandlerDuration", handler_started)
        # a flow program's parallel is a decision on an output: with none, nothing fans out and nothing joins
        fixed = self.config.joined_by and FLOW_HEADER not in envelope.headers
        join = first_join(envelope.route.next, self.config.joined_by) if fixed else None
        if not output.frames and join is not None:  # nothing to fan out: the join gets an empty list
            marker = {"width": 0, "failed": []}
            plan.outbound.append(routing.rejoin(envelope, join, [], {**envelope.headers, JOINED_HEADER: marker}, now))
            return HopOutcome.FORWARDED
        if not output.frames:
            plan.outbound.append(routing.finish_unshifted(envelope, actor, now))
            return HopOutcome.COMPLETED
        try:  # only a task run by a flow program (its header) has a program to take its outputs on
            frames = flows.continue_flow(envelope, output.frames) if FLOW_HEADER in envelope.headers else output.frames
        except flows.FlowError as exc:
            plan.outbound.append(flow_failed(envelope, actor, exc, exc.payload, now, telemetry=self.telemetry))
            return HopOutcome.FAILED
        too_wide = fan_too_wide(len(frames), ends_at)
        if too_wide is not None:
            plan.outbound.append(
                routing.to_sump(envelope, actor, Reason.FAN_OUT_TOO_WIDE, error_details(None, too_wide), now)
            )
            return HopOutcome.SUMPED
        outcome, outputs = sent_on(envelope, frames, actor, now, self.config.joined_by)
        plan.outbound.extend(outputs)
        return outcome

    def _unclaimed(
        self, found: HopClaim, envelope: Envelope, key: dict[str, Any], plan: HopPlan, now: dt.datetime
    ) -> HopOutcome:
        """A hop that was not claimed (`_claim`): the envelope is refused, halted, dropped as a
        duplicate or left for redelivery while another delivery runs it."""
        if found.claim is Claim.TAKEN:
            from asya.admission import taken  # only an envelope from outside the mesh is refused so

            return self._refuse(plan, envelope, taken(envelope), now)
        if found.claim is Claim.HALTED and found.halted in HALTING:
            plan.outbound.append(routing.halt(envelope, self.config.actor, HALTING[found.halted], now))
            return HopOutcome(found.halted)
        if found.claim in (Claim.DUPLICATE, Claim.HALTED):  # HALTED here: the task has ended
            first = self.ledger.claimant(key)
            plan.follows = first if first != plan.message_id else None
            return HopOutcome.DUPLICATE
        plan.redeliver, plan.held_until = True, found.held_until  # IN_PROGRESS
        return HopOutcome.REDELIVERED

    def _claim(self, envelope: Envelope, key: dict[str, Any], plan: HopPlan, remaining_ms: int | None) -> HopClaim:
        """Claim the hop before its handler runs. A tracked envelope's hop is claimed in its task record,
        by the one status write the hop makes (docs/status.md, "One write per hop"); any other in the
        ledger's idempotency table, if the function keeps one. A second record of the same hop in
        one batch is a duplicate either way. An envelope from outside the mesh claims a new record,
        or the one its own message made (`asya.admission`); it is no one's duplicate in its batch, so
        that a forgery under a hop's id cannot make the hop follow its refusal."""
        if not self.reporter.tracks(envelope):
            return self.ledger.claim(key, plan.message_id, remaining_ms, self.leases)
        if not plan.foreign and not self.ledger.first_in_batch(key, plan.message_id):
            return DUPLICATE_HOP
        admitted_by = plan.message_id if plan.foreign else None
        return self.reporter.claim_hop(
            envelope, self.config.actor, remaining_ms, admitted_by=admitted_by, leases=self.leases
        )

    def _check_destinations(self, plan: HopPlan, envelope: Envelope, outcome: HopOutcome) -> HopOutcome:
        """An output that could never be sent (`routing.unsendable`) sends the envelope to x-sump."""
        if self.has_queue is None:
            return outcome
        for outbound in plan.outbound:
            queue = self.config.queue_name(outbound.destination)
            if routing.unsendable(outbound.kind, queue, self.has_queue):
                plan.outbound = [routing.unknown_actor(envelope, self.config.actor, queue, utc_now())]
                return HopOutcome.SUMPED
        return outcome

    def _on_handler_error(self, envelope: Envelope, plan: HopPlan, error: Exception) -> HopOutcome:
        outcome, outbound = handler_failure(self.config, envelope, error, self.telemetry)
        plan.outbound.extend(outbound)
        return outcome

    def _on_fly(self, envelope: Envelope, event: Any) -> None:
        self.telemetry.logger.debug("fly event", extra={"fly": event})
        self.reporter.send_fly(envelope, event)

    def _finish(
        self, plan: HopPlan, envelope: Envelope | None, outcome: HopOutcome, started: float, body: str
    ) -> HopPlan:
        plan.outbound, plan.bodies = self.bodies.written(plan.outbound, envelope, body)
        for outbound in plan.outbound:
            if carries_error_payload(outbound):
                reason = outbound.decision.reason
                self.telemetry.count("MessagesFailed", "reason", reason.value if reason else "unknown")
        if self.telemetry.segments is not None:
            from asya.hop_trace import trace_hop  # a traced actor's only: the others' cold start does without it

            trace_hop(self.telemetry.segments, plan.span, envelope, self.config.actor, outcome, plan.outbound, started)
        self.telemetry.count("MessagesProcessed", "outcome", outcome)
        self.telemetry.took("ProcessingDuration", started)
        return plan


def _halted(envelope: Envelope, known: Mapping[str, str]) -> Phase | None:
    """Pre-flight: a canceled task (or root, for a branch) or a paused task is not run further."""
    if not known or stealthy(envelope.headers):
        return None
    own = known.get(envelope.id)
    root = known.get(root_of(envelope.id, envelope.headers))
    if TaskStatus.CANCELED in (own, root):
        return Phase.CANCELED
    return HALTING.get(own or "")


def _tightest(*limits: float | None) -> float | None:
    tightest = None  # a loop, not min() of a list: this runs on every hop
    for limit in limits:
        if limit is not None and (tightest is None or limit < tightest):
            tightest = limit
    return tightest
