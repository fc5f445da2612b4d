"""What a Spark actor's dispatcher and collector are made of, built once per execution environment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from asya.claims import Claims
from asya.entry import Handles, LambdaEntry
from asya.reporting import StatusReporter, status_reporter
from asya.seal import EnvelopeSeal
from asya.telemetry import Telemetry
from asya.transport import SqsTransport, Transport
from asya_spark.jobs import SparkJobs
from asya_spark.ledger import BatchLedger
from asya_spark.settings import SparkSettings
from asya_spark.staging import Staging


@dataclass
class SparkParts:
    settings: SparkSettings
    ledger: BatchLedger
    staging: Staging
    jobs: SparkJobs
    telemetry: Telemetry
    transport: Transport
    reporter: StatusReporter
    claims: Claims | None  # large payloads: restored before staging, checked in before sending
    seal: EnvelopeSeal  # the mesh's envelopes' (`asya.seal`): checked on arrival, put on what is sent

    @classmethod
    def build(cls, settings: SparkSettings, transport: Transport | None = None) -> SparkParts:
        config = settings.sidecar
        telemetry = Telemetry(config.namespace, config.actor, tracing=config.tracing)
        seal = EnvelopeSeal(config.seal_secret)
        return cls(
            settings=settings,
            ledger=BatchLedger(settings.batches_table, config.namespace, config.actor),
            staging=Staging(settings.bucket, config.namespace, config.actor),
            jobs=SparkJobs(settings),
            telemetry=telemetry,
            transport=transport or SqsTransport(max_batch_bytes=config.max_message_bytes, seal=seal),
            reporter=status_reporter(config, telemetry),
            claims=config.claims(),
            seal=seal,
        )


F = TypeVar("F", bound=Handles)


def entry_point(build: Callable[[SparkParts], F]) -> LambdaEntry[F]:
    """A Spark actor function's entry point (`asya.entry`): its settings are read at the first event."""
    return LambdaEntry(lambda: build(SparkParts.build(SparkSettings.from_env())))
