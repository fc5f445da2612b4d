"""Throughput and latency of a 3-actor pipeline on the local stack, next to the local transport limit.

In one run, against one local endpoint:
  1. the transport limit: bare boto3 SendMessageBatch + ReceiveMessage + DeleteMessageBatch of small
     messages through one queue, in batches of 10 (messages/s through one hop's worth of SQS calls),
     the measure hops/s through the mesh is compared with;
  2. the mesh: envelopes/s through prep → infer → post → x-sink (each envelope is 4 such hops, plus
     the status writes and the idempotency writes), from the first send until the mesh is idle, then
     every result counted (in task records, or S3 objects for larger ones);
  3. end-to-end latency at low load: one envelope at a time, send → result kept, p50 / p95.

For the mesh with the defaults it also prints what the endpoint was asked per hop (requests by
service and operation, counted by the endpoint), the CPU each operation took it, and how busy the
endpoint's process was: the endpoint is moto in one Python process, so at about one core it is the
bottleneck, whatever the workers do, and its dearest operations are what bound the mesh.

    python -m bench.local_mesh [--envelopes 1000] [--workers 1] [--latency-samples 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_local.endpoint.process import endpoint_admin, free_port
from asya_local.stack import LocalStack

MESH = Path(__file__).resolve().parents[1] / "tests" / "integration" / "mesh" / "mesh.yaml"
ROUTE = {"prev": [], "curr": "prep", "next": ["infer", "post"]}
SETTLE_SECONDS = 1.0
HOPS = 4  # prep, infer, post, x-sink: each a receive, a handler call and a send


def transport_limit(stack: LocalStack, messages: int) -> float:
    sqs = stack.client("sqs")
    url = sqs.create_queue(QueueName=f"asya-bench-probe-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    body = json.dumps({"id": "x", "route": ROUTE, "payload": {"n": 0}})
    started = time.perf_counter()
    moved = 0
    while moved < messages:
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": body} for i in range(10)])
        received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if received:
            entries: list[Any] = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(received)]
            sqs.delete_message_batch(QueueUrl=url, Entries=entries)
        moved += len(received)
    return moved / (time.perf_counter() - started)


def mesh_throughput(stack: LocalStack, envelopes: int) -> float:
    """From the first send until every queue is empty again; results are counted once, afterwards,
    because listing a growing bucket while the mesh runs would load the very endpoint being measured."""
    sqs = stack.client("sqs")
    url = sqs.get_queue_url(QueueName=f"asya-{stack.namespace}-prep")["QueueUrl"]
    before = stack.kept_results().count()
    bodies = [json.dumps({"id": f"b-{uuid.uuid4()}", "route": ROUTE, "payload": {"n": n}}) for n in range(envelopes)]
    started = time.perf_counter()
    for start in range(0, envelopes, 10):
        entries = [{"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies[start : start + 10])]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    if not stack.wait_until_idle(timeout=900, settle=SETTLE_SECONDS):
        raise RuntimeError("the mesh did not drain")
    elapsed = time.perf_counter() - started - SETTLE_SECONDS
    kept = stack.kept_results().count() - before
    if kept != envelopes:
        raise RuntimeError(f"{kept} results for {envelopes} envelopes")
    return envelopes / elapsed


def latencies(stack: LocalStack, samples: int) -> list[float]:
    sqs, kept = stack.client("sqs"), stack.kept_results()
    url = sqs.get_queue_url(QueueName=f"asya-{stack.namespace}-prep")["QueueUrl"]
    found = []
    for n in range(samples):
        envelope_id = f"lat-{uuid.uuid4()}"
        started = time.perf_counter()
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"id": envelope_id, "route": ROUTE, "payload": {"n": n}}))
        while not kept.succeeded(envelope_id):
            time.sleep(0.005)
        found.append(time.perf_counter() - started)
    return found


def without_idempotency(mesh: LoadedMesh) -> LoadedMesh:
    actors = {name: actor.model_copy(update={"idempotency": False}) for name, actor in mesh.config.actors.items()}
    return mesh.model_copy(update={"config": mesh.config.model_copy(update={"actors": actors})})


def print_requests(asked: dict[str, list[float]], hops: int, busy: float) -> None:
    """What the mesh asked of the endpoint per hop, and what each operation cost the endpoint in CPU:
    the endpoint is the bottleneck, so its dear operations are what bound the mesh."""
    per_hop = sum(count for count, _ in asked.values()) / hops
    cpu = sum(seconds for _, seconds in asked.values())
    print(f"  endpoint (with defaults): {per_hop:.2f} requests per hop; its process busy {busy:.0%} of a core,")
    print(f"    {cpu / hops * 1000:.2f} ms of CPU per hop answering requests")
    print("    (GetQueueAttributes is this bench waiting for idle; the bare loop makes 0.3 requests per message)")
    for operation, (count, seconds) in sorted(asked.items(), key=lambda item: -item[1][1])[:8]:
        print(
            f"    {count / hops:6.3f} per hop  {seconds / count * 1000:5.2f} ms each  {seconds / cpu:4.0%} of the CPU"
            f"  {operation}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envelopes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1, help="execution environments per function")
    parser.add_argument("--latency-samples", type=int, default=30)
    args = parser.parse_args()
    mesh = load_mesh(MESH)
    with LocalStack(mesh, port=free_port(), workers_per_function=args.workers) as stack:
        limit = transport_limit(stack, args.envelopes)
        latency = latencies(stack, args.latency_samples)
        endpoint_admin(stack.endpoint, "requests-reset", {})
        cpu, wall = stack.endpoint_cpu_seconds(), time.perf_counter()
        rate = mesh_throughput(stack, args.envelopes)
        busy = (stack.endpoint_cpu_seconds() - cpu) / (time.perf_counter() - wall)
        asked = endpoint_admin(stack.endpoint, "requests")
    with LocalStack(without_idempotency(mesh), port=free_port(), workers_per_function=args.workers) as stack:
        rate_plain = mesh_throughput(stack, args.envelopes)
    quantiles = statistics.quantiles(latency, n=20)
    print(f"transport limit (send+receive+delete, batches of 10)  {limit:8.0f} messages/s")
    print(f"  each envelope makes {HOPS} hops (prep, infer, post, x-sink): at the limit {limit / HOPS:.0f} envelopes/s")
    print(f"3-actor pipeline, {args.envelopes} envelopes, {args.workers} worker(s)/function:")
    for label, value in (
        ("with idempotency records (default)", rate),
        ("without (in-batch duplicate check only)", rate_plain),
    ):
        hops = value * HOPS
        print(f"  {label:<42} {value:6.1f} envelopes/s {hops:7.1f} hops/s   hops/s vs messages/s {hops / limit:.3f}")
    print_requests(asked, args.envelopes * HOPS, busy)
    p50, p95 = statistics.median(latency) * 1000, quantiles[18] * 1000
    print(f"end-to-end latency at low load ({args.latency_samples} samples)  p50 {p50:6.0f} ms   p95 {p95:6.0f} ms")


if __name__ == "__main__":
    main()
