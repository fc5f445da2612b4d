"""A batch of records through the hop pipeline, with every outcome returned instead of sent.

This is how a Spark actor applies its handler: the job runs where it may neither reach SQS nor the
task table (its role reads and writes its staging prefix only), so each record's envelopes come back
as `Routed` rows that the collector sends after the job. The routing is the Lambda sidecar's own
`HopRunner`, so a Spark actor has the same ABI, routing table, resiliency and time limits.

What a Spark batch cannot have is cross-record state beyond the batch: duplicates across batches are
dropped before staging (the dispatcher's hop claims), and the pre-flight statuses (canceled or paused
tasks) are read by the dispatcher and handed in as `known`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from asya.config import SidecarConfig
from asya.dedup import HopLedger
from asya.handler import Handler, load_handler
from asya.hop import HopRunner
from asya.routing import Decision, Outbound
from asya.telemetry import Telemetry
from asya.timeouts import alarm_installed
from asya.tracecontext import trace_header, traceparent_of


@dataclass(frozen=True, slots=True)
class Routed:
    """One envelope a record produced: which queue it goes to, its body and its delay, and the hop's
    decision for it (what the collector reports on the task, without reading the body back)."""

    message_id: str  # the input record (SQS message id) that produced it
    queue: str
    body: str
    delay: int
    decision: Decision
    trace: str | None = None  # its `AWSTraceHeader` (`asya.tracecontext.trace_header`), sent by the collector

    @property
    def kind(self) -> str:
        """actor, self, sink, sump: the `MessagesSent` destination dimension."""
        return self.decision.kind.value

    def to_json(self) -> str:
        """orjson writes the dataclasses' fields itself; `asdict` would deep-copy each one first."""
        return orjson.dumps(self).decode()

    @classmethod
    def from_json(cls, line: str | bytes) -> Routed:
        row = orjson.loads(line)
        return cls(**{**row, "decision": Decision.from_json(row["decision"])})

    @classmethod
    def of(cls, message_id: str, queue: str, body: str, outbound: Outbound) -> Routed:
        trace = trace_header(traceparent_of(outbound.wire))
        return cls(message_id, queue, body, round(outbound.delay), outbound.decision, trace)


def staged_record(message_id: str, body: str) -> str:
    """One line of a staged batch (JSON lines): the SQS message id and the body exactly as received."""
    return orjson.dumps({"message_id": message_id, "body": body}).decode()


def read_staged_record(line: str | bytes) -> tuple[str, str]:
    record = orjson.loads(line)
    return str(record["message_id"]), str(record["body"])


class BatchHops:
    """One execution environment's hop pipeline for batches: build once (the handler's class is
    instantiated here), then `run` any number of record streams through it."""

    def __init__(
        self, config: SidecarConfig, handler: Handler | None = None, known: Mapping[str, str] | None = None
    ) -> None:
        self.config = config
        self.telemetry = Telemetry(config.namespace, config.actor, tracing=config.tracing)
        self.runner = HopRunner(config, handler or load_handler(config.handler), HopLedger(), self.telemetry)
        self.known = dict(known or {})

    def run(self, records: Iterable[tuple[str, str]]) -> Iterator[Routed]:
        """Records are (message id, body); every envelope they produce is yielded, x-sump included."""
        return self.run_with((message_id, body, None) for message_id, body in records)

    def run_with(self, records: Iterable[tuple[str, str, Handler | None]]) -> Iterator[Routed]:
        """Records are (message id, body, handler), the handler standing in for the configured one
        (`None`: the configured). One call is one batch: duplicates are dropped within it, never
        against an earlier batch that a reused worker happened to run."""
        self.runner.ledger.start_batch()
        try:
            with alarm_installed():
                for message_id, body, handler in records:
                    yield from self.run_one(message_id, body, handler)
        finally:
            self.telemetry.flush()

    def run_one(self, message_id: str, body: str, handler: Handler | None = None) -> list[Routed]:
        """One record; `handler` stands in for the configured one (the DataFrame style replays the
        rows its function produced for this record as a generator)."""
        plan = self.runner.run(message_id, body, None, known=self.known, handler=handler)
        return [
            Routed.of(message_id, self.config.queue_name(out.destination), text, out)
            for out, text in zip(plan.outbound, plan.bodies, strict=True)
        ]


def replay(payloads: list[Any]) -> Handler:
    """A generator handler that yields precomputed payloads: zero of them means "nothing more to do"."""

    def handler(_payload: Any) -> Iterator[Any]:
        yield from payloads

    return handler


def raising(error: BaseException) -> Handler:
    """A handler that fails with `error`: a whole batch failing at once (a DataFrame function that
    raised, a Spark job that failed) meets each envelope's resiliency policy through it."""

    def handler(_payload: Any) -> Any:
        raise error

    return handler
