"""Envelopes per second through `asya.lambda_handler`, next to a hand-written Powertools hop and the
floor of decoding + encoding them.

A no-op handler and the in-memory transport isolate the sidecar's own cost: parsing and validating
the envelope, the route check, duplicate and deadline checks, the time limit, the handler call, the
route shift, serialization, grouping and "sending", partial batch response and metrics. The
Powertools hop is what a user would write by hand on `BatchProcessor` without the mesh: parse the
body, call the handler, shift the route, serialize, send the batch's outputs together, answer the
partial batch response; it checks nothing. The floor is `orjson.loads` + `orjson.dumps` of the same
envelope. All three are measured in the same run, the sidecar's and the Powertools hop's rounds
taking turns (a busy moment of a shared machine falls on both), best of `--rounds` each; the ratio
of the two is what issue 45 bounds: at most 10 times.

`--tracing` measures the sidecar a second time as a traced mesh runs it (`tracing: true`): a segment
per hop, sent as Lambda sends them, a UDP datagram to the X-Ray daemon (here a socket of the bench's
that counts them), in rounds that take turns with the untraced ones; the difference is what tracing
adds to a hop.

    python -m bench.sidecar_hop [--envelopes 20000] [--batch 10] [--rounds 3] [--tracing]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import time
from typing import Any

import orjson

ENVELOPE = {
    "id": "bench-0001",
    "route": {"prev": ["ingest"], "curr": "hop", "next": ["post", "store"]},
    "headers": {"trace_id": "t-42", "traceparent": "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"},
    "status": {"phase": "processing", "actor": "hop", "attempt": 1, "created_at": "2026-11-22T00:00:00.000Z"},
    "payload": {"text": "The quick brown fox jumps over the lazy dog", "tokens": list(range(32)), "score": 0.5},
}


RATIO_GOAL = 10  # the sidecar's CPU per hop against the hand-written hop's (issue 45)


def noop(payload: Any) -> Any:
    return payload


def _sidecar_rate(envelopes: int, batch: int, daemon: str | None = None) -> float:
    """`daemon`: the X-Ray daemon's address, for a traced mesh's hops (`--tracing`)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    import asya
    from asya.config import SidecarConfig
    from asya.sidecar import configure
    from asya.transport import MemoryTransport
    from asya_local.functions.lambda_shapes import LambdaContext, sqs_record

    variables = {"ASYA_NAMESPACE": "bench", "ASYA_ACTOR_NAME": "hop", "ASYA_HANDLER": "bench.sidecar_hop.noop"}
    if daemon is not None:
        variables["ASYA_TRACING"] = "true"
        os.environ["AWS_XRAY_DAEMON_ADDRESS"] = daemon  # read by the sidecar's segments, as on Lambda
    else:
        os.environ.pop("AWS_XRAY_DAEMON_ADDRESS", None)
    transport = MemoryTransport()
    configure(SidecarConfig.from_env(variables), transport)
    events = [
        {"Records": [sqs_record("asya-bench-hop", json.dumps({**ENVELOPE, "id": f"e-{b}-{i}"})) for i in range(batch)]}
        for b in range(envelopes // batch)
    ]
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):  # EMF lines: formatted, not shown
        asya.lambda_handler(events[0], LambdaContext("asya-bench-hop"))  # warm-up
        transport.queues.clear()
        started = time.perf_counter()
        for event in events:
            asya.lambda_handler(event, LambdaContext("asya-bench-hop"))
        elapsed = time.perf_counter() - started
    sent = len(transport.queues["asya-bench-post"])
    assert sent == len(events) * batch, f"expected every envelope forwarded, got {sent}"
    return sent / elapsed


def _powertools_rate(envelopes: int, batch: int) -> float:
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from asya.transport import MemoryTransport, OutgoingMessage
    from asya_local.functions.lambda_shapes import LambdaContext, sqs_record

    transport = MemoryTransport()
    processor = BatchProcessor(event_type=EventType.SQS)
    outputs: dict[str, list[OutgoingMessage]] = {}

    def hop(record: SQSRecord) -> None:
        envelope = orjson.loads(record.body)
        envelope["payload"] = noop(envelope["payload"])
        route = envelope["route"]
        route["prev"].append(route["curr"])
        route["curr"] = route["next"].pop(0)
        queue = f"asya-bench-{route['curr']}"
        outputs.setdefault(queue, []).append(OutgoingMessage(record.message_id, orjson.dumps(envelope).decode()))

    def handler(event: dict[str, Any], context: Any) -> Any:
        outputs.clear()
        response = process_partial_response(event=event, record_handler=hop, processor=processor, context=context)
        for queue, messages in outputs.items():
            transport.send(queue, messages)
        return response

    events = [
        {"Records": [sqs_record("asya-bench-hop", json.dumps({**ENVELOPE, "id": f"e-{b}-{i}"})) for i in range(batch)]}
        for b in range(envelopes // batch)
    ]
    handler(events[0], LambdaContext("asya-bench-hop"))  # warm-up
    transport.queues.clear()
    started = time.perf_counter()
    for event in events:
        handler(event, LambdaContext("asya-bench-hop"))
    elapsed = time.perf_counter() - started
    sent = len(transport.queues["asya-bench-post"])
    assert sent == len(events) * batch, f"expected every envelope forwarded, got {sent}"
    return sent / elapsed


def _floor_rate(envelopes: int) -> float:
    body = json.dumps(ENVELOPE).encode()
    started = time.perf_counter()
    for _ in range(envelopes):
        orjson.dumps(orjson.loads(body))
    return envelopes / (time.perf_counter() - started)


class DaemonSink:
    """A UDP socket standing for Lambda's X-Ray daemon: it takes the segments and counts them."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.socket.setblocking(False)
        self.received = 0

    @property
    def address(self) -> str:
        host, port = self.socket.getsockname()
        return f"{host}:{port}"

    def drain(self) -> int:
        """Count (and drop) what arrived since the last call: the buffer never fills."""
        with contextlib.suppress(BlockingIOError):
            while True:
                self.socket.recv(65_535)
                self.received += 1
        return self.received


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envelopes", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=10, help="records per SQS event (Lambda's default is 10)")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many rounds is reported")
    parser.add_argument("--tracing", action="store_true", help="also the sidecar of a traced mesh (`tracing: true`)")
    args = parser.parse_args()
    sidecar_rates, powertools_rates, traced_rates = [], [], []
    sink = DaemonSink() if args.tracing else None
    for _ in range(args.rounds):
        sidecar_rates.append(_sidecar_rate(args.envelopes, args.batch))
        powertools_rates.append(_powertools_rate(args.envelopes, args.batch))
        if sink is not None:
            traced_rates.append(_sidecar_rate(args.envelopes, args.batch, sink.address))
            sink.drain()
    sidecar, powertools = max(sidecar_rates), max(powertools_rates)
    floor = statistics.median(_floor_rate(args.envelopes) for _ in range(args.rounds))
    print(f"envelope size            {len(json.dumps(ENVELOPE))} bytes, batches of {args.batch}")
    print(f"sidecar hop              {sidecar:12,.0f} envelopes/s  ({1e6 / sidecar:7.1f} µs each)")
    print(f"Powertools hop           {powertools:12,.0f} envelopes/s  ({1e6 / powertools:7.1f} µs each)")
    print(f"floor (loads + dumps)    {floor:12,.0f} envelopes/s  ({1e6 / floor:7.1f} µs each)")
    print(f"sidecar vs Powertools    {powertools / sidecar:12.1f} x  (goal: at most {RATIO_GOAL:g}, issue 45)")
    print(f"sidecar vs the floor     {floor / sidecar:12.1f} x")
    if sink is not None:
        traced = max(traced_rates)
        print(f"sidecar hop, traced      {traced:12,.0f} envelopes/s  ({1e6 / traced:7.1f} µs each)")
        added = 1e6 / traced - 1e6 / sidecar
        print(f"tracing adds             {added:12.1f} µs a hop  ({sink.received:,} segments sent)")


if __name__ == "__main__":
    main()
