"""The collector: routes what a Spark actor's job produced, once the job has ended.

It is invoked two ways, and both end in `settle`:

- by the EventBridge rule for the application's *Job Run State Change* events, as soon as a run ends;
- by a schedule (the reconciler), because those events are delivered on a best-effort basis: it walks
  the actor's open batches and settles each one. It also starts batches whose dispatcher stopped
  between staging and starting, and cancels jobs that outlived their execution timeout.

A job that succeeded has its output routed: every envelope is sent where the hop pipeline decided
(next actor, x-sink, x-sump), after the task status is reported exactly as the Lambda sidecar does. A
job that failed or was canceled (or succeeded without a complete output) fails every envelope of its
batch with `SparkJobError`, through the same hop pipeline, so the actor's resiliency policy decides:
a delayed retry in a later batch, or x-sink as failed. Routing holds a lease on the batch, so an event
and the reconciler never both send its envelopes; if sending fails, the lease is released and the
next reconciliation routes the batch again (the envelopes keep their ids, so the next actors' duplicate
check absorbs any that had gone out). A collector that dies while routing cannot release its lease: the
lease is sized to the batch (`SparkSettings.routing_lease_seconds`, 30 s and 50 ms per envelope), so the
batch waits that long for the next reconciliation, not a flat five minutes.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson
from aws_lambda_powertools.metrics import MetricUnit

from asya.batch import BatchHops, Routed, raising
from asya.envelope import Phase, parse_envelope, utc_now
from asya.outcomes import BatchOutcome, HopOutcome
from asya.routing import Decision, Kind, unknown_actor, unsendable
from asya.sending import Delivery, send_all
from asya.telemetry import Telemetry
from asya_spark.dispatch import start
from asya_spark.jobs import SUCCESS, TERMINAL, JobRun, SparkJobError
from asya_spark.ledger import Batch, State
from asya_spark.parts import SparkParts, entry_point

JOB_STATE_CHANGE = "EMR Serverless Job Run State Change"
Records = Callable[[], list[tuple[str, str]]]  # the batch's staged records, read on first call
# what a record sent only to x-sink ended as, by the phase its output carries
SINK_OUTCOMES = {Phase.FAILED: HopOutcome.FAILED, Phase.CANCELED: HopOutcome.CANCELED, Phase.PAUSED: HopOutcome.PAUSED}
RECONCILE_RESERVE_MS = 15_000  # stop taking batches when the invocation has less time left than this


class Collector:
    def __init__(self, parts: SparkParts) -> None:
        self.parts = parts

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, int]:
        try:
            if event.get("detail-type") == JOB_STATE_CHANGE:
                detail = event.get("detail", {})
                if detail.get("state") not in TERMINAL:
                    return {}
                return {self.settle_run(str(detail["jobRunId"])): 1}
            return self.reconcile(context)
        finally:
            self.parts.telemetry.flush()

    def settle_run(self, job_run_id: str) -> BatchOutcome:
        run = self.parts.jobs.get(job_run_id)
        batch = self.parts.ledger.get(run.batch_id)
        if batch is None or batch.state == State.ROUTED:
            return BatchOutcome.ALREADY_ROUTED
        return self.settle(batch, run)

    def reconcile(self, context: Any = None) -> dict[str, int]:
        outcomes: Counter[str] = Counter()
        for batch in self.parts.ledger.open_batches():
            if context is not None and context.get_remaining_time_in_millis() < RECONCILE_RESERVE_MS:
                break
            outcomes[self.settle(batch)] += 1
        return dict(outcomes)

    def settle(self, batch: Batch, run: JobRun | None = None) -> BatchOutcome:
        parts, settings = self.parts, self.parts.settings
        age = time.time() - batch.staged_at
        if batch.job_run_id is None:  # staged, not started
            if age < settings.start_grace_seconds:
                return BatchOutcome.STAGED
            return BatchOutcome.STARTED if start(parts, batch) is not None else BatchOutcome.HELD
        run = run or parts.jobs.get(batch.job_run_id)
        if run.state not in TERMINAL:
            if age > settings.job_deadline_seconds:
                parts.jobs.cancel(run.job_run_id)
                return BatchOutcome.CANCELED
            return BatchOutcome.RUNNING
        if not parts.ledger.lease(batch.batch_id, settings.routing_lease_seconds(batch.size)):
            return BatchOutcome.LEASED
        records = functools.cache(lambda: parts.staging.read_input(batch.batch_id))  # read once, if needed
        try:
            outcome, routed = self._outcome(batch, run, records)
            sent = self._unknown_actors_to_sump(routed, records)
            self._send(sent)
        except BaseException:
            parts.ledger.release(batch.batch_id)
            raise
        parts.ledger.routed(batch.batch_id, outcome)
        if outcome is BatchOutcome.SUCCEEDED:  # a failed job's hops ran here, and counted themselves
            count_hops(parts.telemetry, sent)
        parts.telemetry.count("SparkJobs", "outcome", outcome)
        parts.telemetry.observe("SparkJobDuration", MetricUnit.Seconds, run.duration_seconds or age)
        return outcome

    def _outcome(self, batch: Batch, run: JobRun, records: Records) -> tuple[BatchOutcome, list[Routed]]:
        if run.state == SUCCESS:
            routed = self.parts.staging.read_output(batch.batch_id)
            if routed is not None:
                return BatchOutcome.SUCCEEDED, routed
            message = f"Spark job {run.job_run_id} succeeded but left no complete output"
            return BatchOutcome.FAILED, self._fail_all(batch, message, records())
        message = f"Spark job {run.job_run_id} ended {run.state}" + (f": {run.details}" if run.details else "")
        return BatchOutcome(run.state.lower()), self._fail_all(batch, message, records())

    def _fail_all(self, batch: Batch, message: str, records: list[tuple[str, str]]) -> list[Routed]:
        """Every envelope of the batch meets the actor's resiliency policy with `SparkJobError`."""
        self.parts.telemetry.log_failure("Spark job failed", batch=batch.batch_id, error=message)
        hops = BatchHops(self.parts.settings.sidecar, raising(SparkJobError(message)), batch.known)
        return list(hops.run(records))

    def _unknown_actors_to_sump(self, routed: list[Routed], records: Records) -> list[Routed]:
        """The job cannot see the mesh's queues: an output for an actor with none (`routing.unsendable`)
        is found here, and its record goes to x-sump with `UnknownActor` instead, as the sidecar does.
        Sent as it was, it would fail the routing at every reconciliation, holding the batch forever."""
        transport, config = self.parts.transport, self.parts.settings.sidecar
        missing = {
            row.message_id: row.queue for row in routed if unsendable(row.decision.kind, row.queue, transport.has_queue)
        }
        if not missing:
            return routed
        bodies = dict(records())
        now = utc_now()
        kept = [row for row in routed if row.message_id not in missing]
        for message_id, queue in missing.items():
            out = unknown_actor(parse_envelope(bodies[message_id]), config.actor, queue, now)
            kept.append(Routed.of(message_id, config.queue_name(out.destination), orjson.dumps(out.wire).decode(), out))
        return kept

    def _send(self, routed: list[Routed]) -> None:
        parts = self.parts
        registered = parts.reporter.write_before_send(_hops(routed))
        if registered.unregistered:
            raise RuntimeError(f"fan-out branches of {len(registered.unregistered)} record(s) could not be registered")
        claims = parts.claims
        check_in = (
            (lambda body: claims.check_in(orjson.loads(body), body)) if claims is not None else (lambda body: body)
        )
        deliveries = [
            Delivery(
                r.message_id, r.queue, check_in(registered.body(r.decision, r.body)), r.delay, r.kind, trace=r.trace
            )
            for r in routed
        ]
        unsent = send_all(parts.transport, deliveries, parts.settings.sidecar.send_attempts, self._count_sent)
        if unsent:
            raise RuntimeError(f"envelopes of {len(unsent)} record(s) could not be sent; the batch is routed again")

    def _sendable(self, body: str) -> str:
        """The job's output as SQS carries it: a large one with its payload in S3 (`asya.claims`)."""
        claims = self.parts.claims
        return claims.check_in_body(body) if claims is not None else body

    def _count_sent(self, delivery: Delivery) -> None:
        self.parts.telemetry.count("MessagesSent", "destination", delivery.kind)


def count_hops(telemetry: Telemetry, routed: list[Routed]) -> None:
    """The job's hops as the sidecar counts its own: `MessagesProcessed` by outcome, one per input
    record, and `MessagesFailed` by reason, one per failure sent on. The job cannot publish them (its
    lines reach only the job's logs), so they are read from where its outputs went: without them a
    Spark actor's work would count as nothing, on CloudWatch as on the console."""
    for _, decisions in _hops(routed):
        telemetry.count("MessagesProcessed", "outcome", hop_outcome(decisions))
        for decision in decisions:
            if decision.phase is Phase.FAILED:
                telemetry.count("MessagesFailed", "reason", decision.reason.value if decision.reason else "unknown")


def hop_outcome(decisions: list[Decision]) -> HopOutcome:
    """A record's outcome from its outputs' destinations: x-sump, its own queue again (a retry), the
    next actors, or x-sink (failed, canceled, paused, or at its route's end)."""
    kinds = {decision.kind for decision in decisions}
    if Kind.SUMP in kinds:
        return HopOutcome.SUMPED
    if Kind.SELF in kinds:
        return HopOutcome.RETRIED
    phases = {decision.phase for decision in decisions}
    if Kind.ACTOR not in kinds:
        for phase, outcome in SINK_OUTCOMES.items():
            if phase in phases:
                return outcome
    return HopOutcome.FORWARDED


def _hops(routed: list[Routed]) -> list[tuple[str, list[Decision]]]:
    """What the status reporter needs per record: the decisions for its outputs."""
    decisions: dict[str, list[Decision]] = {}
    for row in routed:
        decisions.setdefault(row.message_id, []).append(row.decision)
    return list(decisions.items())


lambda_handler = entry_point(Collector)
