"""The short form of `make chaos`: the bench's harness (`asya_local.testing.chaos`) with a dozen tasks
of the chaos mesh's Lambda-only flow, under every fault the local stack injects, ends with nothing
lost, nothing duplicated, nothing stuck and every task's status agreeing with its results.

Each task fans out into three branches; a third of them fail their first attempt at `flaky` and are
retried, one task in ten has a branch that fails for good at `judge` (that task ends `failed`). The
Spark actor is left to `make chaos` and to tests/integration/test_spark_mesh.py: a Spark job costs a
JVM start and a 20 s batching window, which would double this test for a path the fault hooks reach
the same way (its dispatcher and collector are queue workers like any other).
"""

from __future__ import annotations

import pytest

from asya_local.endpoint.process import LocalEndpoint
from asya_local.testing.chaos import WorkerLines, chaos_stack, run_chaos

TASKS = 12


@pytest.mark.timeout(400)
def test_under_every_fault_nothing_is_lost_duplicated_stuck_or_disagreeing(endpoint: LocalEndpoint) -> None:
    lines = WorkerLines()
    with chaos_stack(endpoint, seed=11, on_line=lines) as (stack, ledger):
        report = run_chaos(stack, lines, ledger, flow="lambda-only", tasks=TASKS, timeout=300)
    print("\n".join(report.lines()))
    tail = "\n".join(lines.tail[-40:])
    assert report.ok, f"{report.problems()}\n{tail}"
    assert report.envelopes == TASKS * 3, "every task fanned out into three branches"
    assert report.outcomes["failed"] == 1, "the branch of the task whose n ends in 7 fails at judge"
    assert report.faults["duplicate delivery"] > 0, "the faults were injected"
