"""Container actors' consumer processes as the local stack runs them (`asya_local.worker_processes`),
started by tests against a moto server with one environment and this checkout's path, their lines kept."""

from __future__ import annotations

import sys
from pathlib import Path

from asya_local.functions.faults import FaultSpec
from asya_local.runtime import FunctionPython
from asya_local.worker_processes import WorkerProcesses


def consumer_workers(
    environment: dict[str, str], folder: Path, lines: list[str], faults: FaultSpec | None = None
) -> WorkerProcesses:
    """Workers of one actor, `a`, each with `environment`; every line they print goes to `lines`."""
    return WorkerProcesses(
        on_line=lambda _source, line: lines.append(line),
        spec=lambda _function: {"environment": environment},
        python=lambda _function: FunctionPython(tuple(Path(entry) for entry in sys.path if entry)),
        source=lambda _function: "a",
        folder=folder,
        faults=faults,
    )
