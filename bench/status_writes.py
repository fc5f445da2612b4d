"""Status writes per hop: what task tracking costs in DynamoDB requests, the mesh's dominant AWS cost.

In one run, in process (moto), the same work under both settings of `ASYA_STATUS_WRITES`:
  - a 3-actor pipeline (prep → infer → post → x-sink: 4 hops per task);
  - a fan-out pipeline (fan yields 3 branches, each goes on to post and x-sink: 7 hops per task).
Every DynamoDB call made by the gateway's task creation, the sidecars and x-sink is counted by
operation; a hop is one envelope handled by one actor (x-sink included).

    python -m bench.status_writes [--tasks 200]
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from typing import Any

import boto3

from asya.task_store import TaskStore
from asya_crew.crew import CrewActor, CrewSettings
from asya_crew.sink import Sink
from asya_local.testing.inprocess import InProcessMesh
from asya_local.testing.tables import EVENTS, TASKS, create_tables

WRITES = ("PutItem", "UpdateItem", "BatchWriteItem", "DeleteItem")
HANDLERS = {"prep": "bench.actors.touch", "infer": "bench.actors.touch", "post": "bench.actors.touch"}
HANDLERS["fan"] = "bench.actors.fan"
BUCKET = "bench-results"


def run(tasks: int, mode: str, route: list[str]) -> tuple[Counter[str], int]:
    """Counts of DynamoDB calls by operation, and hops, for `tasks` tasks through `route`."""
    calls: Counter[str] = Counter()
    env = {"ASYA_TASKS_TABLE": TASKS, "ASYA_EVENTS_TABLE": EVENTS, "ASYA_STATUS_WRITES": mode}
    sink = CrewActor(CrewSettings("bench", "x-sink", BUCKET, TASKS), Sink([]).decide)
    with InProcessMesh("bench", HANDLERS, env, functions={"x-sink": sink.handle}) as mesh:
        create_tables(boto3.client("dynamodb"))
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        store = TaskStore(TASKS)
        for _ in range(tasks):
            store.create({"id": mesh.send(route, {"n": 1, "parts": 3})})  # what the gateway writes

        def count(event_name: str, **_: Any) -> None:
            calls[event_name.rsplit(".", 1)[-1]] += 1

        session = boto3.DEFAULT_SESSION
        assert session is not None
        session.events.register("before-call.dynamodb", count)
        calls["PutItem"] += tasks  # the creations above, counted by hand (made before the hook)
        mesh.run_until_idle()
        session.events.unregister("before-call.dynamodb", count)
    return calls, mesh.hops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tasks", type=int, default=200)
    arguments = parser.parse_args()
    os.environ.update(AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    print(f"{arguments.tasks} tasks per case; writes = {' + '.join(WRITES)}")
    for name, route in (("pipeline", ["prep", "infer", "post"]), ("fan-out", ["fan", "post"])):
        for mode in ("coalesced", "every-point"):
            calls, hops = run(arguments.tasks, mode, route)
            writes = sum(calls[operation] for operation in WRITES)
            reads = calls["GetItem"] + calls["BatchGetItem"] + calls["Query"]
            print(
                f"{name:9} {mode:12} hops {hops:6}  writes {writes:6} ({writes / hops:.2f}/hop)  "
                f"reads {reads:5} ({reads / hops:.2f}/hop)  by operation: {dict(sorted(calls.items()))}"
            )


if __name__ == "__main__":
    main()
