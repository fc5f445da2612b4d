"""The latency a hop adds on AWS, modelled: every AWS call the mesh makes takes a fixed in-region figure,
and the calls a hop makes one after another (its critical path) are told from those that overlap.

Each case runs in process (moto) as `bench.cost_per_hop` deploys it: the gateway creates each task, the
actors' sidecars and x-sink handle one record per invocation (a queue with one task in flight: the
latency case, not the throughput one). A botocore hook makes each call the sidecar, the crew or the
gateway makes inside an invocation last its figure (moto's own time included), and records when it
started and ended; calls whose spans overlap went together. Reported per case: the invocation's time
less its handler's own (the handlers are no-ops, or timed and taken off), the calls, and how many of
them were made one after another.

The figures, each an argument (milliseconds, p50, in the same region as the caller):

- SQS `SendMessage`, `SendMessageBatch` and the other queue calls: 8. Bite-Sized Serverless, "Serverless
  Messaging: Latency Compared" (Luc van Donkersgoed, eu-west-1, September 2022) measures 16.2 ms p50 from
  a producer's publish to an SQS-triggered consumer's start, send call included; the send call itself
  is put at about half of that, under the "< 10 ms to publish" commonly quoted for SQS.
- SQS to Lambda hand-off after the send returns (the event source mapping's poll and invoke): 8.2, the
  rest of the 16.2 ms above. Paid by every hop, the mesh's and a hand-written chain's alike.
- DynamoDB `GetItem`, `PutItem`, `UpdateItem`, `Query`, `BatchGetItem`, `BatchWriteItem`: 5. AWS
  Knowledge Center, "Why is my DynamoDB request latency high?": atomic operations such as GetItem and
  PutItem see single-digit millisecond average latency (the service's side; 5 ms leaves room for the
  network within the region).
- DynamoDB `TransactWriteItems`, `TransactGetItems`: 10, two phases (a transaction reads and writes
  each item twice, and is billed so: DynamoDB developer guide, "Capacity management for transactions").
- S3 `PutObject`, `GetObject`, `HeadObject` of small objects: 30. AWS whitepaper "Best Practices Design
  Patterns: Optimizing Amazon S3 Performance", "Timeouts and Retries for Latency-Sensitive
  Applications": requests under 512 KB see median latencies "in the tens of milliseconds".
- Any other service (Secrets Manager, read once per execution environment): 10.
- Step Functions Express, one Lambda Task state to the next: 77.3 (synchronous Express, p50), from the
  same Bite-Sized Serverless measurement (118 ms asynchronous). AWS documents no per-transition latency
  for Step Functions, only throughput quotas.

Cases: a plain hop (the middle actor of a 3-actor pipeline), a fan-out hop (3 branches, and 30: three
`SendMessageBatch` calls for its branches), a join's last branch (the arrival that completes the fan
and sends the joined envelope: examples/reviews, summarise-reviews) and one before it (kept and
counted, nothing sent), a flow program's decision
(examples/answers), and a hand-written hop next to them that validates the envelope with a pydantic
model under Powertools' `BatchProcessor` and sends it on with one `SendMessage`. Then a plain 4-hop
task end to end, from the gateway's create to x-sink's write, with the hand-offs between hops, against
Step Functions Express running the same three functions. Each case runs `--tasks` tasks after a
warm-up one, interleaved with the hand-written hop; the best of them is reported (the figures are
sleeps: what varies is the machine's own time).

    python -m bench.hop_latency [--tasks 7] [--sqs-ms 8] [--dynamodb-ms 5] [--s3-ms 30] ...
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import boto3

from asya_local.testing.metering import botocore_hooks
from bench.cost_per_hop import Decisions, FlowCase, deployed, example, synthetic

PLAIN_ROUTE = ["prep", "infer", "post"]
TRANSACTIONS = {"TransactWriteItems", "TransactGetItems"}
SWITCH_SECONDS = 0.0002  # the interpreter's thread switch interval while hops run (its default: 5 ms)


@dataclass(frozen=True, slots=True)
class Figures:
    """Milliseconds each AWS call takes (see the module's docstring for where they come from)."""

    sqs: float = 8.0
    pickup: float = 8.2
    dynamodb: float = 5.0
    transaction: float = 10.0
    s3: float = 30.0
    other: float = 10.0
    express: float = 77.3

    def of(self, service: str, operation: str) -> float:
        if service == "dynamodb":
            return self.transaction if operation in TRANSACTIONS else self.dynamodb
        return {"sqs": self.sqs, "s3": self.s3}.get(service, self.other)


@dataclass(frozen=True, slots=True)
class Call:
    name: str  # service.Operation
    started: float
    ended: float
    figure: float  # seconds it takes on AWS


@dataclass(frozen=True, slots=True)
class Invocation:
    function: str
    wall: float  # seconds, less the handler's own time
    calls: list[Call]
    decisions: int  # a flow program's conditions evaluated in it

    @property
    def seconds(self) -> float:
        """What the invocation adds on AWS: its own time outside the calls, and each round of calls
        taking its slowest call's figure. moto's time past a figure (its `UpdateItem` takes 10 ms and
        more on a busy machine) is the bench's, not AWS's, and is taken off."""
        spans = sum(max(c.ended for c in calls) - min(c.started for c in calls) for calls in self.rounds)
        return self.wall - spans + self.aws

    @property
    def aws(self) -> float:
        """Seconds spent waiting for AWS: the slowest call of each round, one round after another."""
        return sum(max(call.figure for call in calls) for calls in self.rounds)

    @property
    def rounds(self) -> list[list[Call]]:
        """The calls in the order they went, those whose spans overlap together: the critical path is
        one call (the longest) of each round."""
        found: list[list[Call]] = []
        ends = -1.0
        for call in sorted(self.calls, key=lambda call: call.started):
            if found and call.started < ends:
                found[-1].append(call)
                ends = max(ends, call.ended)
            else:
                found.append([call])
                ends = call.ended
        return found

    def path(self) -> str:
        return " → ".join(" + ".join(call.name for call in round_) for round_ in self.rounds) or "(none)"


class Delays:
    """botocore hooks (built in, so every client made while they are installed has them): a call made
    while `active` lasts its figure, moto's own time included, and is recorded with its span."""

    def __init__(self, figures: Figures) -> None:
        self.figures = figures
        self.active = False
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    def before(self, context: dict[str, Any], **_: Any) -> None:
        context["latency_started"] = time.perf_counter()

    def after(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        started = context.get("latency_started")
        if started is None or not self.active:
            return
        service = model.service_model.service_name
        figure = self.figures.of(service, model.name) / 1000
        left = figure - (time.perf_counter() - started)
        if left > 0:
            time.sleep(left)
        with self._lock:
            self.calls.append(Call(f"{service}.{model.name}", started, time.perf_counter(), figure))

    @contextmanager
    def installed(self) -> Iterator[None]:
        """The hooks in place; threads switched often, so that calls sent together start together even
        while moto's work in one of them holds the interpreter (AWS's would be done elsewhere)."""
        switching = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_SECONDS)
        try:
            with botocore_hooks([("before-call", self.before), ("after-call", self.after)]):
                yield
        finally:
            sys.setswitchinterval(switching)


@dataclass
class Timing:
    """Wraps functions as Lambda runs them: each invocation's time, its handler's, its calls."""

    delays: Delays
    decisions: Decisions
    invocations: list[Invocation] = field(default_factory=list)
    handler_seconds: float = 0.0

    def timed(self, name: str, _memory_mb: int, function: Callable[..., Any]) -> Callable[..., Any]:
        def invoke(*args: Any, **kwargs: Any) -> Any:
            self.delays.calls, self.delays.active, self.handler_seconds = [], True, 0.0
            decided = self.decisions.count
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                wall = time.perf_counter() - started - self.handler_seconds
                self.delays.active = False
                calls = list(self.delays.calls)
                self.invocations.append(Invocation(name, wall, calls, self.decisions.count - decided))

        return invoke

    @contextmanager
    def handlers_timed(self) -> Iterator[None]:
        """Each handler call's time is the handler's own, not the hop's (`asya.hop` calls `invoke`)."""
        import asya.hop

        invoke = asya.hop.invoke

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return invoke(*args, **kwargs)
            finally:
                self.handler_seconds += time.perf_counter() - started

        with mock.patch.object(asya.hop, "invoke", timed):
            yield


class HandWritten:
    """What a user would write without the mesh: Powertools' `BatchProcessor`, the envelope validated by
    a pydantic model, its route shifted, and one `SendMessage` to the next queue (resolved once)."""

    def __init__(self) -> None:
        from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
        from pydantic import BaseModel

        class Route(BaseModel):
            prev: list[str]
            curr: str
            next: list[str]

        class Envelope(BaseModel):
            id: str
            route: Route
            headers: dict[str, Any] = {}
            payload: Any

        self.model = Envelope
        self.processor = BatchProcessor(event_type=EventType.SQS)
        self.sqs = boto3.client("sqs")
        self.url = self.sqs.create_queue(QueueName="hand-written-next")["QueueUrl"]

    def hop(self, record: Any) -> None:
        envelope = self.model.model_validate_json(record.body)
        envelope.route.prev.append(envelope.route.curr)
        envelope.route.curr = envelope.route.next.pop(0)
        self.sqs.send_message(QueueUrl=self.url, MessageBody=envelope.model_dump_json())

    def handle(self, event: dict[str, Any], context: Any) -> Any:
        from aws_lambda_powertools.utilities.batch import process_partial_response

        return process_partial_response(event=event, record_handler=self.hop, processor=self.processor, context=context)

    def event(self, number: int) -> dict[str, Any]:
        from asya_local.functions.lambda_shapes import sqs_record

        body = {"id": f"hand-{number}", "route": {"prev": [], "curr": "a", "next": ["b"]}, "payload": {"n": 1}}
        return {"Records": [sqs_record("hand-written", json.dumps(body))]}


@dataclass
class Case:
    """A flow, and which of its invocations is the hop this case is about."""

    title: str
    flow: FlowCase
    picks: Callable[[Invocation], bool]
    found: list[Invocation] = field(default_factory=list)
    tasks: list[list[Invocation]] = field(default_factory=list)  # every invocation of each task, in order


def cases() -> list[Case]:
    plain = synthetic("plain", PLAIN_ROUTE, {"n": 1})
    return [
        Case("plain hop", plain, lambda found: found.function == "infer"),
        Case(
            "fan-out hop (3 branches)",
            synthetic("fan-out", ["fan", "post"], {"parts": 3}),
            lambda found: found.function == "fan",
        ),
        Case(
            "fan-out hop (30 branches)",
            synthetic("wide fan-out", ["fan", "post"], {"parts": 30}),
            lambda found: found.function == "fan",
        ),
        Case(
            "join's last branch",
            example("reviews", "summarise-reviews", inputs=slice(0, 1)),
            lambda found: found.function == "summarise" and _made(found, "dynamodb.Query"),
        ),
        Case(
            "a branch's arrival at a join",
            example("reviews", "summarise-reviews", inputs=slice(0, 1)),
            lambda found: found.function == "summarise" and not _made(found, "sqs."),
        ),
        Case(
            "program decision",
            example("answers", inputs=slice(0, 1)),
            lambda found: found.decisions > 0 and not found.function.startswith("x-"),
        ),
    ]


def _made(invocation: Invocation, call: str) -> bool:
    """Whether the invocation made a call whose name starts with `call` (a service, or an operation)."""
    return any(made.name.startswith(call) for made in invocation.calls)


def measure(case: Case, hand: list[Invocation], timing: Timing, tasks: int) -> None:
    """Run the case's tasks one at a time, each followed by one hand-written hop (interleaved, so the
    machine's load falls on both alike); the first task of each warms its functions up. Nothing made
    outside an invocation (tables, queues, the pump's receives) is delayed or counted."""
    from asya_local.functions.lambda_shapes import LambdaContext

    with deployed(case.flow, timing.timed, batch_size=1) as running:
        written = HandWritten()
        hand_hop = timing.timed("hand-written", 0, written.handle)
        for number in range(tasks + 1):
            mark = len(timing.invocations)
            for payload in case.flow.payloads:
                running.start(payload)
            running.mesh.run_until_idle()
            hand_hop(written.event(number), LambdaContext("hand-written"))
            *task, handwritten = timing.invocations[mark:]
            if number:  # the warm-up made the clients and read the seal's secret
                case.tasks.append(task)
                case.found.extend(found for found in task if case.picks(found))
                hand.append(handwritten)


def best(found: list[Invocation]) -> Invocation:
    if not found:
        raise RuntimeError("the case never made the hop it is about")
    return min(found, key=lambda invocation: invocation.seconds)


def end_to_end(case: Case, figures: Figures) -> tuple[float, str]:
    """A plain task's time from the gateway's create to x-sink's write: every invocation on its way (one
    after another) and the hand-off from each queue to its function; the best task's."""
    totals = []
    for task in case.tasks:
        seconds = sum(invocation.seconds for invocation in task)
        handoffs = sum(1 for invocation in task if invocation.function != "gateway-api")
        totals.append((seconds * 1000 + handoffs * figures.pickup, task))
    total, task = min(totals, key=lambda found: found[0])
    return total, " → ".join(f"{found.function} {found.seconds * 1000:.1f}" for found in task)


def report(measured: list[Case], hand: list[Invocation], figures: Figures) -> None:
    print(
        f"figures (ms, p50 in-region): SQS call {figures.sqs:g}, SQS→Lambda hand-off {figures.pickup:g}, "
        f"DynamoDB call {figures.dynamodb:g}, transaction {figures.transaction:g}, S3 small object {figures.s3:g}, "
        f"other {figures.other:g}; Step Functions Express transition {figures.express:g}"
    )
    print(
        f"\n{'case':28} {'adds ms':>8} {'AWS ms':>7} {'own ms':>7} {'calls':>5} {'in a row':>8}  "
        "the calls, in order (+: together)"
    )
    written = best(hand)
    rows = [("hand-written hop", written)] + [(case.title, best(case.found)) for case in measured]
    for title, found in rows:
        own = found.seconds - found.aws
        print(
            f"{title:28} {found.seconds * 1000:8.1f} {found.aws * 1000:7.1f} {own * 1000:7.1f} {len(found.calls):5d} "
            f"{len(found.rounds):8d}  {found.path()}"
        )
    plain = best(measured[0].found)
    ratio = plain.seconds / written.seconds
    verdict = "met" if ratio <= 1.3 else "NOT met"
    print(f"\nplain hop vs hand-written hop   {ratio:5.2f} x  (goal: at most 1.3, {verdict})")
    floor = (figures.dynamodb + figures.sqs) / figures.sqs
    print(
        f"floor: the hop's claim before its handler and its send after it, one after another: "
        f"{figures.dynamodb + figures.sqs:g} ms vs {figures.sqs:g} ms, {floor:.2f} x"
    )
    total, path = end_to_end(measured[0], figures)
    hops = len(PLAIN_ROUTE) + 1
    express = hops * figures.express
    by_hand = figures.sqs + hops * figures.pickup + len(PLAIN_ROUTE) * written.seconds * 1000 + figures.dynamodb
    print(f"\nplain {hops}-hop task, the gateway's create to x-sink's write: {total:.1f} ms")
    print(f"  invocations (ms, with {hops} hand-offs of {figures.pickup:g} ms between): {path}")
    print(
        f"  a hand-written SQS chain (a SendMessage, {len(PLAIN_ROUTE)} hand-written hops, a PutItem at the end): "
        f"{by_hand:.1f} ms"
    )
    print(f"  Step Functions Express, {hops} transitions of {figures.express:g} ms: {express:.1f} ms")


def main() -> None:
    defaults = Figures()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--tasks", type=int, default=7, help="tasks per case after the warm-up; the best is shown")
    for name in ("sqs", "pickup", "dynamodb", "transaction", "s3", "other", "express"):
        parser.add_argument(f"--{name}-ms", type=float, default=getattr(defaults, name))
    arguments = parser.parse_args()
    figures = Figures(**{name: getattr(arguments, f"{name}_ms") for name in Figures.__dataclass_fields__})
    os.environ.update(AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    delays = Delays(figures)
    decisions = Decisions()
    timing = Timing(delays, decisions)
    hand: list[Invocation] = []
    measured = cases()
    quiet = contextlib.redirect_stdout(open(os.devnull, "w"))  # noqa: SIM115 - the functions' log lines, not shown
    with quiet, delays.installed(), decisions.counted(), timing.handlers_timed():
        for case in measured:
            measure(case, hand, timing, arguments.tasks)
    report(measured, hand, figures)


if __name__ == "__main__":
    main()
