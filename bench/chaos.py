"""`make chaos`: envelopes through a mixed flow under every fault the local stack injects, counted by
`asya_local.testing.chaos` (what is counted, and why re-executions are reported but not failed, is
said there). Exits non-zero unless lost, duplicated, stuck and disagreeing are all 0.

    python -m bench.chaos [--tasks 334] [--seed 11] [--flow mixed|lambda-only|joined|container|program] [--parts N]

Flow `program` is a flow program (chaos_mesh/programs.py): a try/except, a loop and a branch, decided
by the sidecars on each branch's outputs while their workers are killed. Flow `container` passes
each branch through a container actor, whose consumers are killed like the Lambda workers.

`tests/integration/test_local_faults.py` runs the same harness with a few dozen tasks.
"""

from __future__ import annotations

import argparse
import sys

from asya_local.endpoint.process import LocalEndpoint, free_port
from asya_local.gateway_client import GatewayUnreachableError
from asya_local.testing.chaos import WorkerLines, chaos_stack, run_chaos
from asya_local.testing.chaos_mesh.actors import PARTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=334, help="tasks to create (3 branch envelopes each)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--flow", choices=["mixed", "lambda-only", "joined", "container", "program"], default="mixed")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the mesh to go idle")
    parser.add_argument(
        "--parts", type=int, default=PARTS, help="envelopes each task fans out into (over 51: counted in buckets)"
    )
    args = parser.parse_args()
    lines = WorkerLines()
    with LocalEndpoint(free_port()) as endpoint, chaos_stack(endpoint, args.seed, lines) as (stack, ledger):
        print(f"chaos: {args.tasks} tasks of flow {args.flow!r} ({args.parts} parts), seed {args.seed}", flush=True)
        try:
            report = run_chaos(
                stack, lines, ledger, flow=args.flow, tasks=args.tasks, timeout=args.timeout, parts=args.parts
            )
        except GatewayUnreachableError:
            print("\n".join(lines.tail[-40:]))
            raise
    for line in report.lines():
        print(line)
    if not report.ok:
        print(f"FAILED: {report.problems()}")
        print("\n".join(lines.tail[-40:]))
        sys.exit(1)


if __name__ == "__main__":
    main()
