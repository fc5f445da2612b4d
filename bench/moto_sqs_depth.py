"""SQS throughput of the local stack's moto server with a deep queue, without and with `apply_depth_fix()`.

A moto server on a loopback port, one standard queue filled to `--depth` messages, then for about `--seconds`
each: `SendMessageBatch` of 10 (sends/s counts messages), and `ReceiveMessage` of 10 + `DeleteMessageBatch`
(receives/s counts messages). The queue is filled inside the server's process (`Queue.add_message`, which is
cheap in both versions) so the unpatched run does not spend minutes getting to depth. The patch is process-wide,
so the unpatched numbers come from a child process (`--unpatched`).

    python -m bench.moto_sqs_depth [--depth 10000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import boto3
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.server import ThreadedMotoServer
from moto.sqs.models import Message, sqs_backends

from asya_local.endpoint.process import free_port  # does not load the SQS fix

REGION = "us-east-1"
BODY = '{"id": "bench", "route": {"prev": [], "curr": "a", "next": ["b"]}, "payload": {"n": 1}}'


def _fill(queue_name: str, depth: int) -> None:
    queue = sqs_backends[DEFAULT_ACCOUNT_ID][REGION].get_queue(queue_name)
    for i in range(depth):
        message = Message(str(uuid.uuid4()), f"{BODY} {i}")
        message.mark_sent()
        queue.add_message(message)


def _rate(seconds: float, operation: Callable[[], int]) -> float:
    """Messages per second of `operation` (returns how many it handled), for about `seconds` (at least one call)."""
    handled, started = 0, time.perf_counter()
    while True:
        handled += operation()
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return handled / elapsed


def measure(depth: int, seconds: float) -> tuple[float, float]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        sqs: Any = boto3.client(
            "sqs",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        warm = sqs.create_queue(QueueName=f"warm-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        sqs.send_message(QueueUrl=warm, MessageBody="warm")
        sqs.receive_message(QueueUrl=warm)
        name = f"depth-{uuid.uuid4().hex[:8]}"
        url = sqs.create_queue(QueueName=name)["QueueUrl"]
        _fill(name, depth)
        batch = [{"Id": str(i), "MessageBody": BODY} for i in range(10)]

        def send() -> int:
            return len(sqs.send_message_batch(QueueUrl=url, Entries=batch)["Successful"])

        def receive() -> int:
            messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
            if entries:
                sqs.delete_message_batch(QueueUrl=url, Entries=entries)
            return len(messages)

        return _rate(seconds, send), _rate(seconds, receive)
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement (each takes at least one call)")
    parser.add_argument("--unpatched", action="store_true", help="measure moto as released and print two numbers")
    args = parser.parse_args()
    if args.unpatched:
        print(*measure(args.depth, args.seconds))
        return
    child = [sys.executable, "-m", "bench.moto_sqs_depth", "--unpatched"]
    child += ["--depth", str(args.depth), "--seconds", str(args.seconds)]
    output = subprocess.run(child, check=True, capture_output=True, text=True).stdout
    plain_send, plain_receive = map(float, output.split())

    from asya_local.endpoint.moto_sqs import apply_depth_fix  # only here: the unpatched child must not load it

    apply_depth_fix()
    fixed_send, fixed_receive = measure(args.depth, args.seconds)
    print(f"depth: {args.depth}")
    print(f"unpatched sends/s: {plain_send:.1f}")
    print(f"unpatched receives/s: {plain_receive:.1f}")
    print(f"patched sends/s: {fixed_send:.1f}")
    print(f"patched receives/s: {fixed_receive:.1f}")
    print(f"send ratio: {fixed_send / plain_send:.1f}")
    print(f"receive ratio: {fixed_receive / plain_receive:.1f}")


if __name__ == "__main__":
    main()
