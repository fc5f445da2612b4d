"""How long a FLY event takes from the handler's yield to a follower, on the local stack, by the live
log (`gateway.fly: log`, before FLY's fast lane) and by the task's AppSync Events channel
(`gateway.fly: channel`, the default).

For each setting, the integration mesh is deployed into an endpoint of its own, and `--tasks` tasks of
its `ticks` flow run one after another: after a second's wait (the follower subscribes meanwhile), the
`ticking` actor yields `--ticks` FLY events `--every` seconds apart, each saying when it was emitted;
the stack's own gateway client (`asya watch`'s) follows each task over SSE and notes when each event
arrives. Printed: the events that arrived of those emitted, and p50 / p95 / max of emit → arrival.

    python -m bench.fly_latency [--tasks 3] [--ticks 10] [--every 0.2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_local.endpoint.process import free_port
from asya_local.stack import LocalStack

MESH = Path(__file__).resolve().parents[1] / "tests" / "integration" / "mesh" / "mesh.yaml"


def with_fly(mesh: LoadedMesh, fly: str) -> LoadedMesh:
    gateway = mesh.config.gateway.model_copy(update={"fly": fly})
    return mesh.model_copy(update={"config": mesh.config.model_copy(update={"gateway": gateway})})


def latencies(stack: LocalStack, tasks: int, ticks: int, every: float) -> list[float]:
    """Emit → arrival of every FLY event the follower got, in seconds."""
    gateway = stack.gateway_client()
    found: list[float] = []
    for _ in range(tasks):
        payload = {"ticks": ticks, "every": every, "wait": 1.0}
        created = gateway.create_task({"flow": "ticks", "payload": payload})
        found += [time.time() - data["data"]["at"] for kind, data in gateway.follow(created["id"]) if kind == "fly"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--ticks", type=int, default=10)
    parser.add_argument("--every", type=float, default=0.2)
    args = parser.parse_args()
    mesh = load_mesh(MESH)
    emitted = args.tasks * args.ticks
    for fly in ("log", "channel"):
        with LocalStack(with_fly(mesh, fly), port=free_port()) as stack:
            found = sorted(latencies(stack, args.tasks, args.ticks, args.every))
        p50, p95 = statistics.median(found), statistics.quantiles(found, n=20)[18]
        print(
            f"gateway.fly: {fly:<8} {len(found)}/{emitted} events   emit -> SSE follower: "
            f"p50 {p50 * 1000:6.0f} ms   p95 {p95 * 1000:6.0f} ms   max {found[-1] * 1000:6.0f} ms"
        )


if __name__ == "__main__":
    main()
