"""Container actors' consumer processes as the local stack runs them (`asya_local.worker_processes`),
started by tests against a moto server with one environment and this checkout's path, their lines kept;
and what their hops' claims in an idempotency table hold."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyItemNotFoundError

import asya
from asya.hop_records import HopRecords
from asya_local.functions.faults import FaultSpec
from asya_local.runtime import FunctionPython
from asya_local.worker_processes import WorkerProcesses

SIDECAR = Path(asya.__file__).parents[1]  # the folder holding `asya`: workers run with `python -S`, which reads
# no editable install's finder, so the test process's own path may not reach it


def consumer_workers(
    environment: dict[str, str], folder: Path, lines: list[str], faults: FaultSpec | None = None
) -> WorkerProcesses:
    """Workers of one actor, `a`, each with `environment`; every line they print goes to `lines`."""
    return WorkerProcesses(
        on_line=lambda _source, line: lines.append(line),
        spec=lambda _function: {"environment": environment},
        python=lambda _function: FunctionPython((SIDECAR, *(Path(entry) for entry in sys.path if entry))),
        source=lambda _function: "a",
        folder=folder,
        faults=faults,
    )


def in_progress_until(records: HopRecords, hop: dict[str, Any]) -> int | None:
    """When an untracked hop's claim in the idempotency table lapses (epoch ms), as Powertools reads
    the record back; None when the hop is not claimed, or no longer in progress."""
    try:
        record = records.get_record(data=hop)
    except IdempotencyItemNotFoundError:
        return None
    if record is None or record.status != "INPROGRESS" or record.in_progress_expiry_timestamp is None:
        return None
    return int(record.in_progress_expiry_timestamp)
