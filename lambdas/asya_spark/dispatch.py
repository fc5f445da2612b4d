"""The dispatcher: the function behind a Spark actor's queue (`asya-<ns>-<actor>`).

Lambda's SQS event source gathers the envelopes into batches (the actor's `batch_size` and
`batching_window`); each batch becomes one EMR Serverless job run:

1. Each record gets a claim: its hop (envelope id, route position, attempt, redrive), or its message id for a
   body that is not an envelope. Records whose hop another batch already claimed are dropped: that
   batch routes them (a redelivery regrouped by SQS must not run twice).
2. The pre-flight check reads the batch's tasks: the job halts those canceled or paused, and those
   not yet running anywhere (the first hop of a task) are shown `running` at this actor once the job
   has started, as every other task of the batch already is (its previous hop said so).
3. The records are staged to S3, the batch is recorded, the claims are written, the job is started
   with the batch id as its idempotency token, and the batch is marked started.

The batch id is a digest of the records' message ids, so the same batch delivered again finds its own
record and its own job run instead of starting a second one. If the function fails before the end,
the whole batch is redelivered and resumes where it stopped; a batch left staged but not started is
started by the reconciler. Once the job is started the messages are deleted: from here on the batch
record, not the queue, holds them until the collector has routed every envelope. While the actor's
application is stopped for a deploy, starts are on hold (`BatchLedger.held`): the batch is staged and
left to the reconciler, as one whose start failed, rather than sent back to the queue, where each
redelivery would count towards the queue's dead-letter limit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson
from aws_lambda_powertools.metrics import MetricUnit

from asya import routing
from asya.admission import admit
from asya.claims import REF_FIELD, PayloadUnreadableError
from asya.dedup import Hop
from asya.envelope import Envelope, EnvelopeError, parse_envelope, utc_now
from asya.outcomes import HopOutcome
from asya.routing import error_details, raw_to_sump
from asya.sending import Delivery, send_all
from asya.task_record import HALTING
from asya.tracecontext import trace_header, traceparent_of
from asya_spark.ledger import Batch, State
from asya_spark.parts import SparkParts, entry_point


def batch_id_of(message_ids: Iterable[str]) -> str:
    """The same records give the same id, whatever order they arrive in (an EMR client token is ≤ 64)."""
    return hashlib.sha256("\n".join(sorted(message_ids)).encode()).hexdigest()[:32]


def claim_of(message_id: str, body: str) -> tuple[str, Envelope | None]:
    """The record's hop claim, and its envelope if it is one (a body that is not is claimed by its
    message id; the job sends it to x-sump)."""
    try:
        envelope = parse_envelope(body)
    except EnvelopeError:
        return f"msg#{message_id}", None
    hop = Hop.of(envelope)
    run = f"#{hop.redrives}" if hop.redrives else ""  # a redrive runs the hop again, as at a Lambda actor
    return f"hop#{hop.envelope_id}#{hop.position}#{hop.attempt}{run}", envelope


class Dispatcher:
    def __init__(self, parts: SparkParts) -> None:
        self.parts = parts

    def handle(self, event: dict[str, Any], _context: Any = None) -> dict[str, Any]:
        """Stage and start one batch of the mesh's own envelopes, once those from outside the mesh are
        admitted or refused (`asya.admission`). Any failure raises, so the whole batch is redelivered."""
        seal = self.parts.seal
        sealed: list[tuple[str, str]] = []
        foreign: list[tuple[str, str]] = []
        for record in event.get("Records", []):
            message = (str(record["messageId"]), str(record["body"]))
            (sealed if seal.opens(message[1], record.get("messageAttributes")) else foreign).append(message)
        try:
            if foreign:
                self.admit(foreign)
            if sealed:
                self.dispatch(sealed)
        finally:
            self.parts.telemetry.flush()
        return {"batchItemFailures": []}

    def admit(self, records: list[tuple[str, str]]) -> None:
        """Envelopes from outside the mesh: each round this queue again as a new task, sealed, or to
        x-sump, naming no task; none joins a batch as it came. Admitting again is harmless, so a send
        that fails raises and the whole batch comes back."""
        parts, now = self.parts, utc_now()
        config = parts.settings.sidecar
        deliveries = []
        for message_id, body in records:
            try:
                envelope = parse_envelope(body)
            except EnvelopeError as exc:
                details = error_details(None, str(exc))
                outbound = raw_to_sump(
                    exc.raw, message_id, config.actor, reason=exc.reason, details=details, now=now, foreign=True
                )
                outcome = HopOutcome.SUMPED
            else:
                outcome, outbound = admit(envelope, message_id, config.actor, parts.reporter.store, now)
            parts.telemetry.count("MessagesProcessed", "outcome", outcome)
            # written as x-sump's bodies are: what cannot be written whole is cut down, never left unsent
            text = routing.sump_body(outbound.wire, body)
            trace = trace_header(traceparent_of(outbound.wire))  # a producer's trace goes on, as it came
            deliveries.append(Delivery(message_id, config.queue_name(outbound.destination), text, trace=trace))
        unsent = send_all(parts.transport, deliveries, config.send_attempts, lambda _: None)
        if unsent:
            raise RuntimeError(f"{len(unsent)} envelope(s) from outside the mesh could not be admitted or refused")

    def dispatch(self, records: list[tuple[str, str]]) -> Batch | None:
        parts = self.parts
        telemetry = parts.telemetry
        telemetry.count("MessagesReceived", amount=len(records))
        batch_id = batch_id_of(message_id for message_id, _ in records)
        batch = parts.ledger.get(batch_id)
        waiting: list[Envelope] = []  # tasks to show at this actor once the job is started
        if batch is None:
            claims = {message_id: claim_of(message_id, body) for message_id, body in records}
            held = parts.ledger.claimed(claim for claim, _ in claims.values())
            members, seen = [], set()
            for message_id, body in records:
                claim, _ = claims[message_id]
                if held.get(claim, batch_id) != batch_id or claim in seen:
                    continue  # another batch (or an earlier record of this one) carries this hop
                seen.add(claim)
                members.append((message_id, body))
            duplicates = len(records) - len(members)
            if duplicates:
                telemetry.count("MessagesProcessed", "outcome", HopOutcome.DUPLICATE, amount=duplicates)
            if not members:
                return None
            # one BatchGetItem per 100 tasks; the batch's own tasks too: its hops are claimed in the ledger
            statuses = parts.reporter.preflight((body for _, body in members), claimed=False)
            known = {task: status for task, status in statuses.items() if status in HALTING}
            parts.staging.put_input(batch_id, [(message_id, self._whole(body)) for message_id, body in members])
            batch = parts.ledger.stage(batch_id, len(members), known)
            parts.ledger.claim((claims[message_id][0] for message_id, _ in members), batch_id)
            envelopes = [claims[message_id][1] for message_id, _ in members]
            waiting = [e for e in envelopes if e is not None and statuses.get(e.id) not in HALTING]
        if batch.state == State.STAGED and start(parts, batch) is not None:
            for envelope in waiting:
                parts.reporter.write_processing(envelope, parts.settings.actor, started=True)
        return batch

    def _whole(self, body: str) -> str:
        """The body as the job should get it: with its claim-checked payload back (`asya.claims`), as
        the job never calls AWS. One it cannot read is staged as it came, and the job sends it to
        x-sump as `PayloadUnreadable`."""
        claims = self.parts.claims
        if claims is None or f'"{REF_FIELD}"' not in body:
            return body
        try:
            return orjson.dumps(claims.restore(orjson.loads(body))).decode()
        except (PayloadUnreadableError, orjson.JSONDecodeError, TypeError):
            return body


def start(parts: SparkParts, batch: Batch) -> str | None:
    """Start a staged batch's job (or find it again: the batch id is the client token), and record it;
    None while starts are on hold (`BatchLedger.held`): the batch stays staged, its messages are deleted
    as for any staged batch, and the reconciler starts it once the hold is gone."""
    if parts.ledger.held(parts.settings.application_id):
        parts.telemetry.count("SparkBatchesHeld")
        return None
    staging = parts.staging
    job_run_id = parts.jobs.start(
        batch.batch_id,
        staging.uri(staging.input_key(batch.batch_id)),
        staging.uri(staging.output_prefix(batch.batch_id)),
        batch.known,
    )
    parts.ledger.started(batch.batch_id, job_run_id)
    parts.telemetry.count("SparkBatches")
    parts.telemetry.observe("SparkBatchSize", MetricUnit.Count, batch.size)
    return job_run_id


lambda_handler = entry_point(Dispatcher)
