"""The Lambda entry point of every actor: `asya.lambda_handler`.

One invocation is one SQS batch. Each record becomes a hop plan (`asya.hop`), or, when that raises
(a hop's claim that could not be written), a batch item failure, as under Powertools'
`BatchProcessor`, whose per-record wrapping is left out because it is a few percent of a hop's time
(`bench/sidecar_hop`); then every envelope the batch produced is sent with `SendMessageBatch`, grouped by
destination queue, failed entries retried. A record is reported as a batch item failure only when its
outcome could not be sent (or it must run again later); everything routed, x-sump included, is done.

An invocation whose time has run out by the time its records are routed sends, reports and settles
nothing: every record returns to its queue. Lambda ends such an invocation itself; the sidecar checks
anyway, because each hop's claim (in its task record, or the idempotency table) expires with the
invocation, so past that point another delivery of the same message may hold the hop or have
completed it, and anything this one sent (an x-sump "timeout" most of all) would give the envelope a
second, conflicting outcome. An environment stopped and resumed (a host pause, SIGSTOP) is the way
it happens.
"""

from __future__ import annotations

from typing import Any

from asya.claim_leases import ClaimLeases
from asya.config import SidecarConfig
from asya.dedup import hop_ledger
from asya.entry import LambdaEntry
from asya.handler import NOT_LOADED, PROBLEM_FIELD, HandlerConfigError, load_or_defer
from asya.hop import HopPlan, HopRunner
from asya.hop_logging import quiet_sdk_loggers
from asya.reporting import Registered, status_reporter
from asya.routing import Kind
from asya.seal import EnvelopeSeal
from asya.sending import Delivery, return_when_free, send_all
from asya.telemetry import Telemetry
from asya.timeouts import alarm_installed
from asya.tracecontext import trace_header, traceparent_of
from asya.transport import SqsTransport, Transport

RETURN_SECONDS = 0.2  # kept back from the FLY wait for what the invocation does after it
# each output's destination kind as the `MessagesSent` dimension writes it: a `Kind` hashes as its text,
# and a dictionary gives it for a fraction of what reaching the member's `value` costs
_KIND_TEXT = {kind: kind.value for kind in Kind}


class Sidecar:
    def __init__(self, config: SidecarConfig, transport: Transport | None = None) -> None:
        quiet_sdk_loggers()  # before the handler's module is imported: a level it sets is the user's
        self.config = config
        self.seal = EnvelopeSeal(config.seal_secret)
        self.transport = transport or SqsTransport(max_batch_bytes=config.max_message_bytes, seal=self.seal)
        self.telemetry = Telemetry(config.namespace, config.actor, tracing=config.tracing)
        self.ledger = hop_ledger(config.idempotency_table, config.idempotency_ttl, config.namespace)
        self.reporter = status_reporter(config, self.telemetry)
        self.hops = HopRunner(
            config,
            load_or_defer(config.handler, config.actor, self._cannot_load),
            self.ledger,
            self.telemetry,
            self.reporter,
            has_queue=self.transport.has_queue,
        )
        self._entry = self.telemetry.logger.inject_lambda_context(self._handle)
        if self.telemetry.tracer is not None:
            self._entry = self.telemetry.tracer.capture_lambda_handler(self._entry)

    def _cannot_load(self, error: HandlerConfigError) -> None:
        """Said at the start, at ERROR: `asya up` shows it on screen, CloudWatch keeps it."""
        self.telemetry.logger.error(
            f"{self.config.actor} {NOT_LOADED}: {error.problem}; each envelope fails with this error",
            extra={"error_type": type(error).__name__, "handler": self.config.handler, PROBLEM_FIELD: error.problem},
        )

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        """Process one SQS event; `context` may be omitted outside Lambda (no time limit from it)."""
        return self._entry(event, context) if context is not None else self._handle(event, None)

    def _handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        records = event.get("Records", [])
        self.ledger.start_batch()
        leases = getattr(context, "claim_leases", None)  # a container consumer's clock has them
        self.hops.leases = leases if isinstance(leases, ClaimLeases) else None
        # a record without the mesh's seal is admitted or refused (`asya.admission`): no task to check
        sealed = {
            str(record.get("messageId")): self.seal.opens(str(record.get("body", "")), record.get("messageAttributes"))
            for record in records
        }
        known = self.reporter.preflight(
            str(record.get("body", "")) for record in records if sealed[str(record.get("messageId"))]
        )
        plans: list[HopPlan] = []
        failed: set[str] = set()
        try:
            with alarm_installed():
                for record in records:
                    message_id = str(record.get("messageId"))
                    remaining = context.get_remaining_time_in_millis() if context is not None else None
                    try:  # what raises (a claim that could not be written) goes back to its queue
                        plan = self.hops.run(
                            message_id, record["body"], remaining, known=known, sealed=sealed[message_id]
                        )
                    except Exception as exc:  # noqa: BLE001 - any: the record is redelivered, as under Powertools
                        self.telemetry.log_failure(
                            "a record goes back to its queue: its hop could not be planned",
                            message_id=message_id,
                            error_type=type(exc).__name__,
                            error_message=str(exc)[:500],
                        )
                        failed.add(message_id)
                        continue
                    plans.append(plan)
            if _ran_out(context):
                return self._return_all(records)
            registered = self.reporter.write_before_send(
                (plan.message_id, [out.decision for out in plan.outbound]) for plan in plans
            )
            failed |= registered.unregistered
            failed |= self._send([plan for plan in plans if plan.message_id not in failed], registered)
            failed |= {plan.message_id for plan in plans if plan.redeliver}
            failed |= {plan.message_id for plan in plans if plan.follows in failed}
            for plan in plans:
                if plan.key is not None:
                    self.ledger.settle(plan.key, sent=plan.message_id not in failed)
            held = {plan.message_id: plan.held_until for plan in plans if plan.held_until is not None}
            if held:
                let_go = getattr(context, "let_go", None)  # a container consumer's clock: its heartbeat stops
                if callable(let_go):  # extending them, so the visibility given here stands
                    let_go(held)
                return_when_free(self.transport, records, held)
        finally:
            self.reporter.flush_fly(_seconds_left(context))
            self.telemetry.flush()
        return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in sorted(failed)]}

    def _return_all(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """The invocation's time ran out: no record's outcome is this delivery's to give any more."""
        ids = sorted(str(record.get("messageId", "")) for record in records)
        self.telemetry.log_failure("invocation time ran out before its records were routed; all left for redelivery")
        return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in ids]}

    def _send(self, plans: list[HopPlan], registered: Registered) -> set[str]:
        """Send every plan's envelopes (a branch naming its bucket, if it has one); return the records
        whose envelopes did not all go."""
        deliveries = [
            Delivery(
                plan.message_id,
                self.config.queue_name(out.destination),
                registered.body(out.decision, body),
                round(out.delay),
                _KIND_TEXT[out.decision.kind],
                last=not out.decision.branch,
                trace=trace_header(traceparent_of(out.wire)),
            )
            for plan in plans
            for out, body in zip(plan.outbound, plan.bodies, strict=True)
        ]
        unsent = send_all(self.transport, deliveries, self.config.send_attempts, self._count_sent)
        if unsent:
            self.telemetry.log_failure("envelopes not sent; records left for redelivery", records=sorted(unsent))
        return unsent

    def _count_sent(self, delivery: Delivery) -> None:
        self.telemetry.count("MessagesSent", "destination", delivery.kind)


def _ran_out(context: Any) -> bool:
    return context is not None and context.get_remaining_time_in_millis() <= 0


def _seconds_left(context: Any) -> float | None:
    """How long the invocation may still wait for its FLY events, keeping `RETURN_SECONDS` to flush its
    metrics and return: a wait past the function's timeout would fail the whole batch. None: no limit."""
    return None if context is None else context.get_remaining_time_in_millis() / 1000 - RETURN_SECONDS


# Entry point of every actor's Lambda function; the sidecar is built from the environment at the first call.
lambda_handler: LambdaEntry[Sidecar] = LambdaEntry(lambda: Sidecar(SidecarConfig.from_env()))


def configure(config: SidecarConfig | None = None, transport: Transport | None = None) -> Sidecar:
    """(Re)build the sidecar behind `lambda_handler`, e.g. for tests or another transport."""
    return lambda_handler.use(Sidecar(config or SidecarConfig.from_env(), transport))
