"""What the crew shares: a batch loop that persists each record to S3, records the task's status and
sends follow-ups.

A task's final result that is small (its payload at most `ASYA_RESULTS_INLINE_MAX_BYTES` as JSON) is
kept in the task record by the same write that records the final status, instead of an S3 object:
an S3 PUT costs as much as eight DynamoDB write units, and the write is made anyway. It then lives as
long as the results bucket keeps objects (`ASYA_RESULTS_TTL_SECONDS`). Everything else goes to S3: a
larger payload, a task nobody tracks (no tasks table, stealth mode), x-sump's copies, hook copies,
a paused envelope (x-resume reads it back), and the result of a task that had already ended otherwise.

A record is a batch item failure only if its object could not be written or its follow-ups could not
be sent; redelivery then finds its final result already written (S3 conditional writes: the first
write wins) and repeats the status write, which the task store ignores when it already happened, so
results and branch counts are never duplicated.

A record that ends a task branch and sends nothing on (the common case: a result at x-sink, a failure
at x-sump) is kept without a claim: its object is written once and its final status recorded once
whatever the deliveries, so a duplicate costs nothing but the refused writes. A record with follow-ups
(x-sump's copy, hook copies, x-resume's envelope) or that is not final (a paused envelope) would
send them again on a second delivery; with `ASYA_IDEMPOTENCY_TABLE` set (x-sink's), such a record is
claimed in the hop ledger (`asya.dedup`) under (crew actor, envelope id, route position, attempt,
outcome) before anything is written: a completed claim drops the delivery, a claim in progress returns
it to the queue for later, and a claim whose follow-ups could not be sent is freed for the redelivery.

Fan-out branches that end in one batch without follow-ups are counted on their root together, after
the batch (`asya.task_record.Tally`): one write per root instead of one per branch, and none for the
root's final status when the count can tell it is the last (the root's own ending, counted earlier
in the batch, shows what the root still waits for). A count that fails sends its records back to the
queue; their redelivery finds their records ended and counts them one by one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import ClientError

from asya import variables
from asya.admission import admission_problem
from asya.claims import REF_FIELD, Claims, PayloadUnreadableError
from asya.clients import LazyClient
from asya.config import SQS_MAX_MESSAGE_BYTES
from asya.dedup import Claim, Hop, HopLedger, hop_ledger
from asya.entry import LambdaEntry
from asya.envelope import EnvelopeError, Phase, parse_envelope, utc_now
from asya.fans import bucket_of
from asya.headers import ROOT_HEADER
from asya.hop_bodies import preview_original_payload
from asya.joins import given_up_hop
from asya.names import SUMP, resource_name
from asya.reasons import Reason
from asya.results import result_key
from asya.routing import error_details, raw_to_sump, sump_body
from asya.seal import SEAL_ROOM, EnvelopeSeal
from asya.sending import Delivery, return_when_free, send_all
from asya.sump import SumpIndex, sump_entry
from asya.task_record import Ending, Tally, redrives, root_of, stealthy
from asya.task_store import TaskStore
from asya.task_table import UNCLAIMED_HOP
from asya.telemetry import Telemetry
from asya.tracecontext import trace_header, traceparent_of
from asya.transport import SqsTransport, Transport
from asya_crew.traces import trace_keep

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client
    from types_boto3_s3.type_defs import PutObjectRequestTypeDef


@dataclass(frozen=True, slots=True)
class CrewSettings:
    namespace: str
    actor: str
    bucket: str
    tasks_table: str | None = None
    task_ttl: int = variables.TASK_TTL.default
    idempotency_table: str | None = None
    idempotency_ttl: int = variables.IDEMPOTENCY_TTL.default
    inline_max_bytes: int = variables.RESULTS_INLINE_MAX_BYTES.default
    results_ttl: int = variables.RESULTS_TTL.default
    sump_table: str | None = None
    claim_bucket: str | None = None
    claim_check_bytes: int = variables.CLAIM_CHECK_BYTES.default
    sink_hooks: str = ""  # `ASYA_SINK_HOOKS`, read by x-sink only
    flow_versions: frozenset[str] = frozenset()  # `ASYA_FLOW_VERSIONS`, read by x-resume only
    seal_secret: str | None = None  # what the mesh's envelopes are sealed with (`asya.seal`)
    tracing: bool = False  # a segment per record in its task's trace (`asya_crew.traces`)

    @classmethod
    def from_env(cls, actor: str, env: Mapping[str, str] | None = None) -> CrewSettings:
        env = os.environ if env is None else env
        variables.require_all(env, actor, variables.NAMESPACE, variables.RESULTS_BUCKET)
        return cls(
            variables.NAMESPACE.read(env),
            actor,
            str(variables.RESULTS_BUCKET.read(env)),
            variables.TASKS_TABLE.read(env),
            variables.TASK_TTL.read(env),
            variables.IDEMPOTENCY_TABLE.read(env),
            variables.IDEMPOTENCY_TTL.read(env),
            variables.RESULTS_INLINE_MAX_BYTES.read(env),
            variables.RESULTS_TTL.read(env),
            variables.SUMP_TABLE.read(env),
            variables.CLAIM_BUCKET.read(env),
            variables.CLAIM_CHECK_BYTES.read(env),
            variables.SINK_HOOKS.read(env),
            variables.listed(variables.FLOW_VERSIONS.read(env)),
            variables.SEAL_SECRET.read(env),
            variables.TRACING.read(env),
        )

    def queue_name(self, actor: str) -> str:
        return resource_name(self.namespace, actor)

    def claims(self) -> Claims | None:
        """Where payloads over the threshold travel (`asya.claims`), if the mesh says."""
        return Claims(self.claim_bucket, self.namespace, self.claim_check_bytes) if self.claim_bucket else None


@dataclass(slots=True)
class Keep:
    """What one record becomes: an object to write (unless `outcome` is None), the task's final status
    (`final`, if this record ends a task branch) and follow-up envelopes to send."""

    envelope_id: str
    outcome: str | None
    document: dict[str, Any]
    follow_ups: list[tuple[str, str]] = field(default_factory=list)  # (actor, body)
    final: str | None = None
    recorded: bool = True  # False: its task record is another's to end (a join's branch, `asya.joins`)


def _redrives(keep: Keep) -> int:
    headers = keep.document.get("headers")  # x-sump keeps what it is sent, however malformed
    return redrives(headers) if isinstance(headers, dict) else 0


def kept_outcome(keep: Keep) -> str:
    """The name a record is kept under: its outcome, and for the ending of an envelope redriven from
    x-sump which run it ended (`failed.redrive-1`), so that the failure that was redriven stays kept
    beside the next ending (final results are written once). A paused envelope is kept under its
    outcome alone, where x-resume looks for it."""
    assert keep.outcome is not None
    redriven = _redrives(keep) if keep.final is not None else 0
    return f"{keep.outcome}.redrive-{redriven}" if redriven else keep.outcome


def crew_hop(actor: str, keep: Keep) -> dict[str, Any]:
    """The claim's key: like an actor's hop, position and attempt included, so that a task paused,
    resumed and paused again further on is kept again, while a redelivery of either is not."""
    route = keep.document.get("route")
    status = keep.document.get("status")
    # x-sump keeps what it is sent, however malformed: a field of the wrong type counts as absent
    prev = route.get("prev") if isinstance(route, dict) else None
    position = len(prev) if isinstance(prev, list) else 0
    attempt = status.get("attempt") if isinstance(status, dict) else None
    attempt = attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 1
    hop = Hop(actor, keep.envelope_id, position, attempt, _redrives(keep))
    return {**hop.key(), "outcome": keep.outcome or "passed"}


class DeliveryInProgressError(RuntimeError):
    """Another delivery of this record holds its claim: this one goes back to the queue."""


def rejected(record: SQSRecord, actor: str, error: EnvelopeError) -> dict[str, Any]:
    """The failure envelope for a message that is not a valid envelope, keeping what can be kept."""
    details = error_details(None, str(error))
    return raw_to_sump(error.raw, record.message_id, actor, reason=error.reason, details=details, now=utc_now()).wire


def pass_to_sump(wire: dict[str, Any], record: SQSRecord) -> Keep:
    """Nothing to keep here: x-sump keeps it and records the failure. One that quotes a body too large
    to send on whole goes with a preview of it, as an actor's failure does (`asya.hop_bodies`)."""
    body = sump_body(wire, record.body)
    size = len(body.encode())
    if size > SQS_MAX_MESSAGE_BYTES - SEAL_ROOM and "original_payload" in (wire.get("payload") or {}):
        body = preview_original_payload(wire, size)
    return Keep(wire["id"], None, wire, [(SUMP, body)])


def stored_body(document: dict[str, Any], record: SQSRecord) -> bytes:
    """What is kept in S3: the document, or the body as it arrived when the document cannot be written
    (parsed JSON nested past orjson's 254 levels); redelivering it could never do better."""
    try:
        return orjson.dumps(document)
    except TypeError:
        return record.body.encode("utf-8", "surrogatepass")


class CrewActor:
    s3: LazyClient[S3Client] = LazyClient("s3")

    def __init__(
        self,
        settings: CrewSettings,
        decide: Decide,
        s3: S3Client | None = None,
        transport: Transport | None = None,
        ledger: HopLedger | None = None,
    ) -> None:
        self.settings = settings
        self.decide = decide
        self.telemetry = Telemetry(settings.namespace, settings.actor, tracing=settings.tracing)
        self._s3 = s3
        self.tasks = (
            TaskStore(settings.tasks_table, settings.task_ttl, output_ttl_seconds=settings.results_ttl)
            if settings.tasks_table
            else None
        )
        self.sump = SumpIndex(settings.sump_table) if settings.sump_table else None  # x-sump's listing
        self.claims = settings.claims()
        self.seal = EnvelopeSeal(settings.seal_secret)
        self.transport = transport or SqsTransport(seal=self.seal)
        self.ledger = ledger or hop_ledger(settings.idempotency_table, settings.idempotency_ttl, settings.namespace)
        # a record that fails (say, S3 refuses the result) is logged with its exception before it is retried
        self._processor = BatchProcessor(
            event_type=EventType.SQS,
            raise_on_entire_batch_failure=False,
            logger=self.telemetry.logger,  # type: ignore[arg-type]  # Powertools' Logger logs like one
        )

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        deliveries: list[Delivery] = []
        claimed: dict[str, dict[str, Any]] = {}  # message id -> its claim's key, settled after the sends
        held: dict[str, int] = {}  # message id -> when another delivery's claim on it lapses
        tally = Tally()  # branch endings of this batch, counted on their roots after it
        counted_by: dict[str, str] = {}  # branch id -> the message whose count `tally` holds
        self.ledger.start_batch()
        remaining = context.get_remaining_time_in_millis() if context is not None else None

        def on_record(record: SQSRecord) -> None:
            started, sealed = time.time(), self.seal.opens(record.body, record.raw_event.get("messageAttributes"))
            keep = self.decide(record, self.telemetry) if sealed else self._unsealed(record)
            trace_keep(self.telemetry.segments, self.settings.actor, keep, started)
            self.telemetry.logger.set_correlation_id(keep.envelope_id)
            if keep.final is not None and not keep.follow_ups:
                counted_by[keep.envelope_id] = record.message_id
                self._keep(keep, record, tally)  # kept once without a claim (module docstring)
                return
            hop = crew_hop(self.settings.actor, keep)
            found = self.ledger.claim(hop, record.message_id, remaining)
            if found.claim is Claim.DUPLICATE:
                self.telemetry.count("DuplicatesDropped")
                return
            if found.claim is Claim.IN_PROGRESS:
                if found.held_until is not None:
                    held[record.message_id] = found.held_until
                raise DeliveryInProgressError(f"{self.settings.actor}: another delivery is keeping {keep.envelope_id}")
            claimed[record.message_id] = hop
            if keep.outcome is not None:
                self._keep(keep, record)
            trace = trace_header(traceparent_of(keep.document))  # the crew's hop sends them (`trace_keep`)
            deliveries.extend(
                Delivery(record.message_id, self.settings.queue_name(actor), body, trace=trace)
                for actor, body in keep.follow_ups
            )

        try:
            with self._processor(records=event.get("Records", []), handler=on_record, lambda_context=context):
                self._processor.process()
            failed = {str(item["itemIdentifier"]) for item in self._processor.response()["batchItemFailures"]}
            failed |= self._count(tally, counted_by)
            failed |= send_all(self.transport, deliveries, 3, lambda _: self.telemetry.count("MessagesSent"))
            for message_id, key in claimed.items():
                self.ledger.settle(key, sent=message_id not in failed)
            return_when_free(self.transport, event.get("Records", []), held)
        finally:
            self.telemetry.flush()
        return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in sorted(failed)]}

    def _unsealed(self, record: SQSRecord) -> Keep:
        """A message without the mesh's seal (`asya.seal`). x-sump takes one that starts a task as an
        actor admits it (`asya.admission`): a producer's envelope a dead-letter queue brought from an
        actor's queue, whose function failed before it could admit it (an import error at init), or
        while it did (the record remembers the message). Everything else the crew refuses: kept in
        x-sump under its message's id, naming no task, so it ends nothing."""
        try:
            envelope = parse_envelope(record.body)
        except EnvelopeError as exc:
            return self._refused(record, exc.raw, exc.reason, str(exc))
        problem = admission_problem(envelope)
        if self.settings.actor != SUMP:
            problem = f"{self.settings.actor} takes the mesh's own envelopes only (no good seal)"
        elif problem is None and self.tasks is not None and not self.tasks.admit(envelope.id, record.message_id):
            problem = f"id: {envelope.id!r} is a task the mesh already has; a new task needs a new id"
        if problem is None:
            return self.decide(record, self.telemetry)
        return self._refused(record, envelope.to_dict(), Reason.NOT_ADMITTED, f"not admitted: {problem}")

    def _refused(self, record: SQSRecord, raw: Any, reason: Reason, message: str) -> Keep:
        self.telemetry.log_failure("a message from outside the mesh is refused", reason=reason.value, error=message)
        details = error_details(None, message)
        wire = raw_to_sump(
            raw, record.message_id, self.settings.actor, reason=reason, details=details, now=utc_now(), foreign=True
        ).wire
        if self.settings.actor == SUMP:
            return Keep(wire["id"], "sump", wire, final=Phase.FAILED.value)
        return pass_to_sump(wire, record)

    def _count(self, tally: Tally, counted_by: Mapping[str, str]) -> set[str]:
        """Count the batch's branch endings on their roots; the messages whose count failed."""
        failed: set[str] = set()
        for (root_id, bucket), members in tally.pending.items():
            assert self.tasks is not None  # a tally fills only where there are task records
            try:
                self.tasks.count(root_id, members, tally.seen.get(root_id), bucket)
            except Exception:  # as the batch processor does for a record: its messages fail, not the batch
                self.telemetry.logger.exception("branches not counted", extra={"root_id": root_id})
                failed |= {counted_by[member] for member in members}
        return failed

    def _keep(self, keep: Keep, record: SQSRecord, tally: Tally | None = None) -> None:
        """Keep the record's document: in the task record with its final status when it is small
        enough, else as an S3 object whose location the final status names. A payload that travelled
        in S3 (`asya.claims`) is kept itself, so results and a paused envelope hold the real payload."""
        keep.document = self._restored(keep.document)
        output = self._inline_output(keep)
        if output is not None:
            ending = self._finish(keep, {"output": output}, tally)
            if ending is Ending.RECORDED:
                self.telemetry.count("ResultsStored", "outcome", str(keep.outcome))
            if ending is not Ending.LATE:
                return  # kept now, or by the delivery that recorded this ending before
        assert keep.outcome is not None
        key = result_key(self.settings.namespace, keep.envelope_id, kept_outcome(keep))
        if self._write(key, stored_body(keep.document, record), once=keep.final is not None):
            self.telemetry.count("ResultsStored", "outcome", keep.outcome)
        if self.sump is not None:
            self.sump.add(sump_entry(keep.document, key, utc_now(), self.settings.results_ttl))
        if output is None:
            self._finish(keep, {"result": f"s3://{self.settings.bucket}/{key}"}, tally)

    def _restored(self, document: dict[str, Any]) -> dict[str, Any]:
        if self.claims is None or REF_FIELD not in document:
            return document
        try:
            return self.claims.restore(document)
        except PayloadUnreadableError as exc:  # kept with its reference, which says where it was
            self.telemetry.logger.warning("payload not restored", extra={"error": str(exc)})
            return document

    def _inline_output(self, keep: Keep) -> str | None:
        """The payload as JSON when the final status write can carry it (`ASYA_RESULTS_INLINE_MAX_BYTES`)."""
        limit = self.settings.inline_max_bytes
        tracked = self.tasks is not None and not stealthy(keep.document.get("headers", {}))
        if not limit or not tracked or keep.final is None or not keep.recorded or keep.outcome not in _INLINE_OUTCOMES:
            return None
        try:
            output = orjson.dumps(keep.document.get("payload"))
        except TypeError:
            return None
        return output.decode() if len(output) <= limit else None

    def _write(self, key: str, body: bytes, *, once: bool) -> bool:
        """Write one object; False if `once` and the object was already there.

        A branch's final result is written once (S3's conditional write, `If-None-Match: *`): the
        claim alone cannot promise it, since a write whose answer was lost is retried by botocore, and
        a claim freed after failed follow-ups, or lapsed under a delivery still running, lets a second
        delivery keep the record again. The first write wins, as the first final status does in the
        task store; the later delivery goes on to record that status and send its follow-ups. A
        paused envelope is not final: pausing the task again further on overwrites it.
        """
        request: PutObjectRequestTypeDef = {
            "Bucket": self.settings.bucket,
            "Key": key,
            "Body": body,
            "ContentType": "application/json",
        }
        if once:
            request["IfNoneMatch"] = "*"
        try:
            self._put(request, once=once)
        except ClientError as exc:
            if once and exc.response.get("Error", {}).get("Code") == "PreconditionFailed":
                self.telemetry.logger.info("result already kept", extra={"key": key})
                return False
            raise
        return True

    def _put(self, request: PutObjectRequestTypeDef, *, once: bool) -> None:
        """`PutObject`; a conditional one again after S3's 409 `ConditionalRequestConflict` (another
        write of the key was under way), which botocore does not retry: once the other has landed, this
        one is refused as already kept, or wins if the other failed."""
        for delay in CONFLICT_RETRY_SECONDS if once else ():
            try:
                self.s3.put_object(**request)
                return
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConditionalRequestConflict":
                    raise
            time.sleep(delay)
        self.s3.put_object(**request)

    def _finish(self, keep: Keep, kept: dict[str, Any], tally: Tally | None) -> Ending | None:
        """The task branch ends here: its record shows its result (`kept`: where, or the output itself),
        or why it failed. None when there is no record to write (untracked, or not a final status)."""
        headers = keep.document.get("headers", {})
        if self.tasks is None or keep.final is None or not keep.recorded or stealthy(headers):
            return None
        status = keep.document.get("status", {})
        details = {
            **kept,
            "reason": status.get("reason"),
            "error": status.get("error"),
            "actor": status.get("actor"),
            "route": keep.document.get("route"),
            UNCLAIMED_HOP: given_up_hop(keep.document),
        }
        return self.tasks.finish(
            keep.envelope_id,
            root_of(keep.envelope_id, headers),
            keep.final,
            details,
            parent_id=keep.document.get("parent_id"),
            fanned_out=ROOT_HEADER in headers,
            tally=tally,
            bucket=bucket_of(headers),
        )


_INLINE_OUTCOMES = (Phase.SUCCEEDED.value, Phase.FAILED.value, Phase.CANCELED.value)
CONFLICT_RETRY_SECONDS = (0.1, 0.5)  # pauses before the 2nd and 3rd try of a conditional write S3 found racing
Decide = Callable[[SQSRecord, Telemetry], Keep]


def crew_actor(
    actor: str, build_decide: Callable[[CrewSettings], Decide], env: Mapping[str, str] | None = None
) -> CrewActor:
    """A crew function as its variables (`env`, the process's by default) make it: its entry point
    builds it so, and so does the in-process mesh (`asya_local.testing.harness`) from the same
    variables the CDK app gives the function."""
    settings = CrewSettings.from_env(actor, env)
    return CrewActor(settings, build_decide(settings))


def crew_handler(actor: str, build_decide: Callable[[CrewSettings], Decide]) -> LambdaEntry[CrewActor]:
    """A crew function's entry point (`asya.entry`): its settings are read at the first event."""
    return LambdaEntry(lambda: crew_actor(actor, build_decide))
