"""A container actor's consumer on the example's model (`examples/inference`): which device the model
used, hops per second, and a hop longer than its queue's visibility timeout that runs once.

It starts a local endpoint (`asya_local.endpoint.process.LocalEndpoint`), makes the actors' queues, and
runs `python -m asya.consumer`, the entry point of a container actor's task, as a process with the
variables the CDK app gives the task (`ASYA_QUEUE_URL`, the actor's name and handler, its `files`'
`MODEL_PATH`). Nothing of the mesh but the consumer and its queues is involved: no gateway, no tables.

- score: a warm-up envelope first (the process's start and the model's load, reported apart), then
  `--hops` envelopes of `--reviews` reviews each, timed from the first send to the last result in
  x-sink. Every answer is compared with the same model run here on the CPU, and each result says which
  device scored it: on a machine with PyTorch and a GPU, `cuda (<its name>)`; else `cpu`.
- reindex: one hop of `--long` seconds on a queue whose visibility timeout is `--visibility` seconds,
  with two consumer processes: the other would take the message if it became visible while the hop runs.
  It should start once.

    python -m bench.container_actor [--hops 200] [--reviews 8] [--batch 1] [--concurrency 1]
                                    [--long 6] [--visibility 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asya_local.endpoint.process import LocalEndpoint, free_port
from asya_local.functions.lambda_shapes import REGION
from asya_local.roles import local_client
from examples.inference.actors.reindex import STEPS
from examples.inference.actors.sentiment import Scorer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "inference"
MODEL = EXAMPLE / "model" / "weights.json"
NAMESPACE = "bench"
HANDLERS = {"score": "sentiment.Scorer.predict", "reindex": "reindex.rebuild"}
START_TIMEOUT = 60.0  # seconds for a consumer process to start and answer its first envelope


@dataclass(frozen=True)
class Report:
    device: str
    start_seconds: float  # the consumer's start, the model's load and the first hop
    hops: int
    hops_per_second: float
    reviews_per_second: float
    agreeing: int  # answers equal to the model's own on the CPU
    long_seconds: float
    visibility: int
    long_runs: int


def reviews(count: int, offset: int) -> list[dict[str, str]]:
    """`count` reviews cycling through the example's inputs, with ids of their own."""
    products = json.loads((EXAMPLE / "inputs.json").read_text())
    texts = [review["text"] for product in products for review in product["reviews"]]
    return [{"id": f"r{offset}-{n}", "text": texts[(offset + n) % len(texts)]} for n in range(count)]


def envelope(actor: str, envelope_id: str, payload: dict[str, Any]) -> str:
    return json.dumps({"id": envelope_id, "route": {"prev": [], "curr": actor, "next": []}, "payload": payload})


class Queues:
    """The bench's queues in the local endpoint: each actor's, x-sink (where every result lands) and x-sump."""

    def __init__(self, endpoint: LocalEndpoint, visibility: int) -> None:
        self.sqs = local_client("sqs", endpoint.url)
        self.urls = {
            name: self.sqs.create_queue(QueueName=f"asya-{NAMESPACE}-{name}")["QueueUrl"]
            for name in ("score", "reindex", "x-sink", "x-sump")
        }
        self.sqs.set_queue_attributes(QueueUrl=self.urls["reindex"], Attributes={"VisibilityTimeout": str(visibility)})

    def send(self, actor: str, bodies: list[str]) -> None:
        for start in range(0, len(bodies), 10):
            entries = [{"Id": str(n), "MessageBody": body} for n, body in enumerate(bodies[start : start + 10])]
            self.sqs.send_message_batch(QueueUrl=self.urls[actor], Entries=entries)

    def results(self, count: int, timeout: float) -> list[dict[str, Any]]:
        """`count` envelopes received (and deleted) from x-sink; whatever reached x-sump fails the bench."""
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while len(found) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(found)} of {count} results after {timeout:.0f} s; x-sump: {self._sump()}")
            found += self._take("x-sink", wait=1)
        return found

    def depth(self, actor: str) -> int:
        """Messages of the actor's queue, visible or in flight."""
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        found = self.sqs.get_queue_attributes(QueueUrl=self.urls[actor], AttributeNames=names)["Attributes"]
        return sum(int(found[name]) for name in names)

    def _sump(self) -> list[dict[str, Any]]:
        return self._take("x-sump", wait=0)

    def _take(self, queue: str, wait: int) -> list[dict[str, Any]]:
        url = self.urls[queue]
        messages = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=wait).get(
            "Messages", []
        )
        if messages:
            entries = [{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)]
            self.sqs.delete_message_batch(QueueUrl=url, Entries=entries)
        return [json.loads(message["Body"]) for message in messages]


@contextmanager
def consumer(endpoint: LocalEndpoint, queues: Queues, actor: str, log: Path, **settings: str) -> Iterator[None]:
    """`python -m asya.consumer` serving `actor`'s queue, with the example's code on its path as in
    `/var/task`, until SIGTERM drains it."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(EXAMPLE / "actors"), str(ROOT / "sidecar_layer")]),
        "AWS_ENDPOINT_URL": endpoint.url,
        "AWS_DEFAULT_REGION": REGION,
        **endpoint.admin_credentials,
        "ASYA_NAMESPACE": NAMESPACE,
        "ASYA_ACTOR_NAME": actor,
        "ASYA_HANDLER": HANDLERS[actor],
        "ASYA_QUEUE_URL": queues.urls[actor],
        "MODEL_PATH": str(MODEL),  # where the mesh's `files` put it
        **settings,
    }
    with log.open("w") as output:
        process = subprocess.Popen([sys.executable, "-m", "asya.consumer"], env=env, stdout=output, stderr=output)
    try:
        yield
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def measure_score(endpoint: LocalEndpoint, queues: Queues, args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    reference = Scorer(str(MODEL), device="cpu")  # the shipped model run here, to check the consumer's answers
    settings = {"ASYA_CONSUMER_BATCH_SIZE": str(args.batch), "ASYA_CONSUMER_CONCURRENCY": str(args.concurrency)}
    with consumer(endpoint, queues, "score", logs / "score.log", **settings):
        started = time.perf_counter()
        queues.send("score", [envelope("score", "warm-up", {"product": "warm-up", "reviews": reviews(1, 0)})])
        queues.results(1, START_TIMEOUT)
        start_seconds = time.perf_counter() - started
        products: list[dict[str, Any]] = [
            {"product": f"p{n}", "reviews": reviews(args.reviews, n)} for n in range(args.hops)
        ]
        started = time.perf_counter()
        queues.send("score", [envelope("score", product["product"], product) for product in products])
        results = queues.results(args.hops, timeout=max(START_TIMEOUT, args.hops))
        elapsed = time.perf_counter() - started
    expected = {product["product"]: reference.predict(product)["reviews"] for product in products}
    payloads = [result["payload"] for result in results]
    return {
        "device": ", ".join(sorted({payload["device"] for payload in payloads})),
        "start_seconds": start_seconds,
        "hops": len(payloads),
        "hops_per_second": len(payloads) / elapsed,
        "reviews_per_second": len(payloads) * args.reviews / elapsed,
        "agreeing": sum(payload["reviews"] == expected[payload["product"]] for payload in payloads),
    }


def measure_long(endpoint: LocalEndpoint, queues: Queues, args: argparse.Namespace, logs: Path) -> int:
    """How many times a hop of `--long` seconds started, on a queue of `--visibility` seconds, as its
    consumer's log tells (the actor logs its first step). A delivery while it ran would have started on
    the other process within one visibility timeout of the receive, long before the first run ended."""
    log = logs / "reindex.log"
    settings = {"REINDEX_SECONDS": str(args.long), "ASYA_CONSUMER_CONCURRENCY": "2", "ASYA_STOP_GRACE_SECONDS": "3"}
    with consumer(endpoint, queues, "reindex", log, **settings):
        queues.send("reindex", [envelope("reindex", "long-hop", {"product": "p0", "reviews": reviews(2, 0)})])
        queues.results(1, timeout=START_TIMEOUT + args.long)
    return sum(line.endswith(f": 1/{STEPS}") for line in log.read_text().splitlines())


def run(args: argparse.Namespace) -> Report:
    with tempfile.TemporaryDirectory() as folder, LocalEndpoint(free_port()) as endpoint:
        logs = Path(folder)
        queues = Queues(endpoint, args.visibility)
        try:
            score = measure_score(endpoint, queues, args, logs)
            runs = measure_long(endpoint, queues, args, logs)
        except RuntimeError:
            for log in sorted(logs.glob("*.log")):
                print(f"--- {log.name}\n{log.read_text()[-3000:]}", file=sys.stderr)
            raise
    return Report(**score, long_seconds=args.long, visibility=args.visibility, long_runs=runs)


def show(report: Report) -> None:
    print("container actor on examples/inference (python -m asya.consumer, local endpoint)")
    print(f"  score    device: {report.device}")
    print(f"  score    first hop after the consumer's start: {report.start_seconds:.2f} s (start, model load, hop)")
    print(
        f"  score    {report.hops} hops at {report.hops_per_second:.1f} hops/s "
        f"({report.reviews_per_second:.0f} reviews/s); {report.agreeing}/{report.hops} agree with the CPU model"
    )
    print(
        f"  reindex  a {report.long_seconds:g} s hop on a queue with a {report.visibility} s visibility timeout "
        f"started {report.long_runs} time(s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hops", type=int, default=200, help="envelopes to score, after one to warm up")
    parser.add_argument("--reviews", type=int, default=8, help="reviews per envelope")
    parser.add_argument("--batch", type=int, default=1, help="ASYA_CONSUMER_BATCH_SIZE (1 to 10)")
    parser.add_argument("--concurrency", type=int, default=1, help="ASYA_CONSUMER_CONCURRENCY: consumer processes")
    parser.add_argument("--long", type=float, default=6.0, help="seconds of the long hop (REINDEX_SECONDS)")
    parser.add_argument("--visibility", type=int, default=2, help="the long hop's queue's visibility timeout")
    show(run(parser.parse_args()))


if __name__ == "__main__":
    main()
