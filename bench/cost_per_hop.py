"""What a hop and a task cost on AWS, counted request by request, at us-east-1 list prices.

Each flow runs in process (moto) with the mesh's default settings as the CDK app would set them
(status writes coalesced, hop idempotency on, 512 MB arm64 functions, batches of 10): the gateway
creates each task, the actors' sidecars and x-sink handle every envelope, the stream consumer turns
task changes into status events. Every AWS request they make is counted by service and operation in
billing units (`asya_local.testing.metering`), and priced.

Measured: every SQS, DynamoDB and S3 request; Lambda invocations (one per batch) and their duration
(the sidecar's own time: the bench's handlers do nothing; the gateway function's whole request, from
the REST API's event to its answer); log and EMF bytes written at the default log level. Modelled, and
marked so in the output: the event source's empty long polls (they depend on idle time, not on hops: a
floor per queue per month), Lambda's platform lines (those the function's system log level lets
through: none at the mesh's default, WARN, for invocations that succeed), the stream consumer's reads
(free for Lambda triggers), API Gateway's request for each task and its access line. The plain pipeline is
priced through the REST API, through the HTTP API (the same run: the function does the same work for
either) and sent by the client straight to its first actor's queue (no gateway: the first hop's claim
makes the task's record).

    python -m bench.cost_per_hop [--tasks 30]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3

from asya_local.testing.metering import (
    PRICES,
    PRICES_AS_OF,
    ItemLookup,
    Measurement,
    Meter,
    Usage,
    metered,
    per_million,
    step_functions,
)
from asya_local.testing.platform_lines import LOG_EVENT_OVERHEAD, platform_bytes
from bench.cost_gateway import BUCKET, NAMESPACE, SEAL_SECRET, follow_stream, gateway

ROOT = Path(__file__).resolve().parents[1]
IDEMPOTENCY = "asya-idempotency"
POLLERS = 5  # an SQS event source polls with at least five pollers...
LONG_POLL_SECONDS = 20  # ...each a 20 s long poll, so an idle queue costs this many receives
SECONDS_PER_MONTH = 30 * 86_400
GATEWAY_MEMORY_MB = 512  # the API function (asya_cdk.gateway)
# the in-process pump's empty receives (the event source's polling is modelled instead) and the
# queues the bench itself creates
NOT_BILLED = ("ReceiveMessage (empty)", "CreateQueue")
SECRET_READ_PRICE = Decimal("0.05") / 10_000  # Secrets Manager, per API call
SYNTHETIC_ACTORS = {"prep": "bench.actors.touch", "infer": "bench.actors.touch", "post": "bench.actors.touch"}
SYNTHETIC_ACTORS["fan"] = "bench.actors.fan"
GATEWAY_ENTRY, QUEUE_ENTRY = "gateway", "queue"
REST_API, HTTP_API = "REST", "HTTP"
# what a request's access line carries, for sizing it (asya_cdk.access_logs): an IAM caller, a create
ACCESS_LOG_SAMPLE = {
    "$context.requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
    "$context.identity.sourceIp": "203.0.113.25",
    "$context.identity.user": "AROAEXAMPLEROLEID12345:producer-7",
    "$context.identity.userArn": "arn:aws:sts::123456789012:assumed-role/producer/producer-7",
    "$context.requestTimeEpoch": "1795797605123",
    "$context.responseLatency": "48",
    "$context.httpMethod": "POST",
    "$context.path": "/api/v1/mesh",
    "$context.status": "201",
    "$context.responseLength": "412",
    "$context.integrationErrorMessage": "-",
    "$context.authorizer.error": "-",
}


@dataclass(frozen=True, slots=True)
class FlowCase:
    """One flow to run: its mesh, its name in that mesh and the payloads its tasks start with."""

    title: str
    mesh: Any  # asya_cdk.loaded_mesh.LoadedMesh
    flow: str
    payloads: list[Any]
    entry: str = GATEWAY_ENTRY  # or QUEUE_ENTRY: the client sends the first envelope to the first queue itself


class LogCounter(io.TextIOBase):
    """Stands in for stdout while the mesh runs: what Lambda would ship to CloudWatch Logs."""

    def __init__(self) -> None:
        self.bytes = 0
        self.events = 0

    def write(self, text: str) -> int:
        self.bytes += len(text.encode())
        self.events += text.count("\n")
        return len(text)

    def take(self) -> tuple[int, int]:
        found = (self.bytes, self.events)
        self.bytes = self.events = 0
        return found


class Invocations:
    """Wraps functions as Lambda runs them: counts invocations and their billed duration (less the
    time the meter spent looking items up, which is the bench's, not the function's)."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.count: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()
        self.gb_seconds: Counter[str] = Counter()

    def timed(self, name: str, memory_mb: int, function: Callable[..., Any]) -> Callable[..., Any]:
        def invoke(*args: Any, **kwargs: Any) -> Any:
            started, metering = time.perf_counter(), self.meter.seconds
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started - (self.meter.seconds - metering)
                billed_ms = max(1, int(elapsed * 1000 + 0.999))
                self.count[name] += 1
                self.seconds[name] += elapsed  # type: ignore[assignment]
                self.gb_seconds[name] += billed_ms / 1000 * memory_mb / 1024  # type: ignore[assignment]

        return invoke

    def usage(self) -> list[Usage]:
        found = [Usage("lambda", f"Invoke {name}", "request", count) for name, count in self.count.items()]
        return found + [Usage("lambda", f"Duration {name}", "GB-second", gbs) for name, gbs in self.gb_seconds.items()]


@dataclass(frozen=True, slots=True)
class Deployed:
    """A case's mesh running in process: its pump, and `start` to begin one task as the case's entry does."""

    mesh: Any  # asya_local.testing.inprocess.InProcessMesh
    start: Callable[[Any], object]  # what it returns (an id) is not used


Timed = Callable[[str, int, Callable[..., Any]], Callable[..., Any]]


@contextmanager
def deployed(
    case: FlowCase, timed: Timed, setup: Callable[[], AbstractContextManager[Any]] = nullcontext, batch_size: int = 10
) -> Iterator[Deployed]:
    """The case's mesh as the CDK app deploys it (status writes coalesced, every envelope sealed, the crew
    and the gateway), each function wrapped by `timed(name, memory MB, function)`. `setup` is entered
    while the tables, bucket and secret are made (what a bench measures is not their making);
    `batch_size`: the most records the pump hands a function at once."""
    from asya.config import SidecarConfig
    from asya.names import SINK, SUMP
    from asya.sidecar import Sidecar
    from asya_cdk.environment import MeshNames, crew_environment
    from asya_crew import sump
    from asya_crew.crew import CrewActor, CrewSettings
    from asya_crew.sink import Sink
    from asya_local.testing.inprocess import InProcessMesh
    from asya_local.testing.tables import EVENTS, JOINS, TASKS, create_idempotency_table, create_tables
    from asya_local.testing.tables import SUMP as SUMP_TABLE

    config = case.mesh.config
    code_root(case.mesh.base)
    # each actor's own `code:` too, as its function ships it (the mesh's flow-gather: `asya_cdk.flow_maps`)
    sys.path[:0] = list(dict.fromkeys(str(case.mesh.code_dir(actor)) for actor in config.actors))
    resources = {"tasks_table": TASKS, "events_table": EVENTS, "idempotency_table": IDEMPOTENCY, "joins_table": JOINS}
    resources["seal_secret"] = SEAL_SECRET  # every envelope sealed and checked, as deployed
    environments = {actor: case.mesh.actor_environment(actor, resources) for actor in config.actors}
    handlers = {actor: env["ASYA_HANDLER"] for actor, env in environments.items()}
    first = environments[next(iter(handlers))]
    with InProcessMesh(config.namespace, handlers, first, batch_size=batch_size) as mesh:
        with setup():
            create_tables(boto3.client("dynamodb"))
            create_idempotency_table(boto3.client("dynamodb"), IDEMPOTENCY)
            boto3.client("s3").create_bucket(Bucket=BUCKET)
            boto3.client("secretsmanager").create_secret(Name=SEAL_SECRET, SecretString="bench-" + "s" * 58)
        for actor, env in environments.items():
            sidecar = Sidecar(SidecarConfig.from_env(env))
            mesh.functions[actor] = timed(actor, config.actors[actor].memory, sidecar.handle)
        names = MeshNames(
            BUCKET,
            TASKS,
            EVENTS,
            IDEMPOTENCY,
            batches_table="",
            sump_table=SUMP_TABLE,
            joins_table=JOINS,
            seal_secret=SEAL_SECRET,
        )
        for name, decide in ((SINK, Sink([]).decide), (SUMP, sump.decide)):  # as deployed: claims, small results
            crew = CrewActor(CrewSettings.from_env(name, crew_environment(case.mesh, names, name)), decide)
            mesh.functions[name] = timed(name, 512, crew.handle)
        if case.entry == QUEUE_ENTRY:  # the client's own SendMessage; the first hop's claim makes the record
            route = case.mesh.flow_route(case.flow)
            yield Deployed(mesh, lambda payload: mesh.send(route, payload))
            return
        with gateway(case) as served:
            create = timed("gateway-api", GATEWAY_MEMORY_MB, served)
            yield Deployed(mesh, lambda payload: create(case.flow, payload))


def run(case: FlowCase, tasks: int, logs: LogCounter) -> Measurement:
    config = case.mesh.config
    lookups = ItemLookup()
    meter = Meter(lookups.size, lookups.key_of)
    calls = Invocations(meter)
    decisions = Decisions()
    with metered(meter), decisions.counted(), deployed(case, calls.timed, meter.paused) as running:
        logs.take()
        for number in range(tasks):
            running.start(case.payloads[number % len(case.payloads)])
        mesh = running.mesh
        mesh.run_until_idle()
        follow_stream(meter, calls, config.namespace)
        log_bytes, log_events = logs.take()
    usage = [item for item in meter.usage if item.operation not in NOT_BILLED]
    empty = sum(1 for item in meter.usage if item.operation == "ReceiveMessage (empty)")
    usage += calls.usage()
    if case.entry == GATEWAY_ENTRY:
        usage += api_requests(REST_API, tasks)
    usage += log_usage(system_log_levels(case.mesh.config), calls.count, log_bytes, log_events)
    hop_seconds = sum(seconds for name, seconds in calls.seconds.items() if name in mesh.functions)
    return Measurement(tasks, mesh.hops, usage, empty, len(config.actors) + 2, hop_seconds, decisions.count)


def log_usage(levels: dict[str, str], invocations: Counter[str], printed: int, lines: int) -> list[Usage]:
    """What the functions printed (measured), and Lambda's platform lines for their invocations, counted
    for each function only as far as its system log level lets them through (modelled)."""
    platform = sum(platform_bytes(levels[name], count) for name, count in invocations.items())
    return [
        Usage("logs", "log lines + EMF", "GB ingested", (printed + LOG_EVENT_OVERHEAD * lines) / 1e9),
        Usage("logs", "Lambda platform lines (modelled)", "GB ingested", platform / 1e9),
    ]


def system_log_levels(config: Any) -> dict[str, str]:
    """Each function's system log level as the CDK app sets it (`LoggingConfig.SystemLogLevel`): what
    decides which of Lambda's platform lines its invocations write."""
    from asya.names import SINK, SUMP
    from asya_cdk.actor_config import CREW_SETTINGS

    levels = {actor: settings.system_log_level for actor, settings in config.actors.items()}
    levels.update({SINK: CREW_SETTINGS.system_log_level, SUMP: CREW_SETTINGS.system_log_level})
    return levels | {"gateway-api": config.gateway.system_log_level, "gateway-stream": config.gateway.system_log_level}


class Decisions:
    """Counts a flow program's conditions as the sidecars evaluate them (`Program._test`: each `if`,
    each test of a loop's condition), for the Choice states Step Functions would enter for them."""

    def __init__(self) -> None:
        self.count = 0

    @contextmanager
    def counted(self) -> Iterator[None]:
        from asya.flow_program import Program

        test = Program._test

        def counting(program: Program, *args: Any) -> bool:
            self.count += 1
            return test(program, *args)

        Program._test = counting  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            Program._test = test  # type: ignore[method-assign]


def code_root(folder: Path) -> None:
    """`folder` first on the import path, as a function's `code: .` is on Lambda, and no module of
    another example's left imported under the same name (each example has its `actors`)."""
    sys.path.insert(0, str(folder))
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if file.startswith(str(ROOT / "examples")) and not file.startswith(str(folder)):
            del sys.modules[name]


def api_requests(kind: str, tasks: int) -> list[Usage]:
    """API Gateway's part of a task's creation: the request, and the stage's access line for it."""
    from asya_cdk.access_logs import HTTP_ACCESS_LOG_FIELDS, REST_ACCESS_LOG_FIELDS

    fields = REST_ACCESS_LOG_FIELDS if kind == REST_API else HTTP_ACCESS_LOG_FIELDS
    line = json.dumps({name: ACCESS_LOG_SAMPLE[variable] for name, variable in fields.items()}, separators=(",", ":"))
    return [
        Usage("apigateway", f"{kind} API request (modelled)", f"{kind} request", tasks),
        Usage(
            "logs",
            f"{kind} API access line (modelled)",
            "GB ingested",
            tasks * (len(line) + 1 + LOG_EVENT_OVERHEAD) / 1e9,
        ),
    ]


def through_http_api(measured: Measurement) -> Measurement:
    """The same tasks created through the HTTP API: its request and access line instead of the REST API's.
    The function gets the same event (payload format 1.0) and does the same work."""
    kept = [item for item in measured.usage if not item.operation.startswith(f"{REST_API} API ")]
    return replace(measured, usage=kept + api_requests(HTTP_API, measured.tasks))


# -- the cases ------------------------------------------------------------------------------------------


def synthetic(title: str, route: list[str], payload: dict[str, Any], entry: str = GATEWAY_ENTRY) -> FlowCase:
    from asya_cdk.config import MeshConfig
    from asya_cdk.loaded_mesh import LoadedMesh

    actors = {actor: {"handler": SYNTHETIC_ACTORS[actor]} for actor in route}
    config = MeshConfig.model_validate({"namespace": NAMESPACE, "actors": actors, "flows": {"bench": {"route": route}}})
    return FlowCase(title, LoadedMesh(config=config, base=ROOT), "bench", [payload], entry)


def example(name: str, flow: str | None = None, title: str = "", inputs: slice = slice(None)) -> FlowCase:
    """An example's flow (its first, unless named) with its inputs (those `inputs` picks)."""
    from asya_cdk.loading import load_mesh

    folder = ROOT / "examples" / name
    mesh = load_mesh(folder / "mesh.yaml")
    flow = flow or next(iter(mesh.config.flows))
    payloads = json.loads((folder / "inputs.json").read_text())[inputs]
    return FlowCase(f"examples/{name} ({flow}{title})", mesh, flow, payloads)


PLAIN = ("plain 3-actor pipeline (prep → infer → post)", ["prep", "infer", "post"], {"n": 1})


def cases() -> list[FlowCase]:
    """The plain pipeline first (created through the gateway), then sent straight to its first queue."""
    title, route, payload = PLAIN
    return [
        synthetic(f"{title}, through the REST API", route, payload),
        synthetic(f"{title}, sent to the first actor's queue", route, payload, QUEUE_ENTRY),
        synthetic("fan-out (fan yields 3 → post)", ["fan", "post"], {"parts": 3}),
        example("reviews"),
        example("reviews", "summarise-reviews"),
        # a flow program: its first input takes one branch (the model is sure) and the judge's loop
        # twice, each decision taken by the sidecar of the actor before it
        example("answers", title=", a program: 1 branch + a loop going round twice", inputs=slice(0, 1)),
        mapped(3),
    ]


def mapped(items: int) -> FlowCase:
    """`bench/map_mesh`: an actor, a map of `items` items over one actor, flow-gather, an actor."""
    from asya_cdk.loading import load_mesh

    mesh = load_mesh(Path(__file__).resolve().parent / "map_mesh" / "mesh.yaml")
    title = f"a program's map over {items} items (prepare → {items} x square → flow-gather → total)"
    return FlowCase(title, mesh, "squares", [{"items": list(range(1, items + 1))}])


# -- the bill -------------------------------------------------------------------------------------------


def report(case: FlowCase, measured: Measurement, out: Any) -> None:
    hops, tasks = measured.hops, measured.tasks
    print(f"\n## {case.title}: {tasks} tasks, {hops} hops ({hops / tasks:.2f} hops per task)", file=out)
    columns = ("per hop", "per task", "$/M hops")
    print(
        f"{'service':10} {'operation':42} {'unit':12} {' '.join(f'{c:>9}' for c in columns)} {'$/M tasks':>10}",
        file=out,
    )
    rows = sorted(measured.lines().items(), key=lambda row: -PRICES[f"{row[0][0]} {row[0][2]}"] * Decimal(str(row[1])))
    for (service, operation, unit), amount in rows:
        dollars = PRICES[f"{service} {unit}"] * Decimal(str(amount))
        print(
            f"{service:10} {operation[:42]:42} {unit:12} {amount / hops:9.4f} {amount / tasks:9.4f} "
            f"{per_million(dollars, hops):9.4f} {per_million(dollars, tasks):10.4f}",
            file=out,
        )
    total = measured.dollars()
    print(f"{'total':76} {per_million(total, hops):9.4f} {per_million(total, tasks):10.4f}", file=out)
    wru, rru = measured.units("dynamodb", "WRU") / hops, measured.units("dynamodb", "RRU") / hops
    print(f"DynamoDB per hop: {wru:.2f} WRU, {rru:.2f} RRU", file=out)
    standard, express = step_functions(hops / tasks, measured.hop_seconds / hops, measured.decisions / tasks)
    if measured.decisions:
        print(
            f"Flow program: {measured.decisions / tasks:.2f} decisions per task, taken by the sidecars within "
            "the hops above; Step Functions enters a Choice state for each",
            file=out,
        )
    print(
        f"Step Functions for the same flow, per million tasks: Standard ${standard * 1_000_000:,.2f}, "
        f"Express ${express * 1_000_000:,.2f} (Lambda requests of the states included, handler compute not)",
        file=out,
    )
    floor = PRICES["sqs request"] * (POLLERS * SECONDS_PER_MONTH // LONG_POLL_SECONDS)
    print(
        f"Modelled, not per hop: idle event-source polling ${floor:.2f} per queue per month "
        f"({POLLERS} pollers x {LONG_POLL_SECONDS} s long polls), {measured.queues} queues: "
        f"${floor * measured.queues:.2f} a month; {measured.empty_polls} empty receives of the in-process "
        "pump not billed; the seal's secret read once per execution environment start, "
        f"${SECRET_READ_PRICE * 1_000_000:.2f} per million starts",
        file=out,
    )


def goals(plain: Measurement, http: Measurement, queued: Measurement, out: Any) -> None:
    per_hop = per_million(plain.dollars(), plain.hops)
    wru, rru = plain.units("dynamodb", "WRU") / plain.hops, plain.units("dynamodb", "RRU") / plain.hops
    hops = f"{plain.hops / plain.tasks:.0f}-hop tasks"
    print("\n## Goals (plain pipeline, default settings)", file=out)
    for label, value, limit in (
        ("$ per million plain hops", per_hop, Decimal("1.00")),
        (f"$ per million {hops}, REST API", per_million(plain.dollars(), plain.tasks), Decimal("5.00")),
        (f"$ per million {hops}, HTTP API", per_million(http.dollars(), http.tasks), Decimal("6.00")),
        (f"$ per million {hops}, SQS", per_million(queued.dollars(), queued.tasks), Decimal("5.00")),
        ("DynamoDB WRU per hop", Decimal(str(wru)), Decimal("1.0")),
        ("DynamoDB RRU per hop", Decimal(str(rru)), Decimal("0.5")),
    ):
        verdict = "met" if value <= limit else "NOT met"
        print(f"{label:32} {value:10.3f}  goal <= {limit}  {verdict}", file=out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--tasks", type=int, default=30, help="tasks per flow")
    arguments = parser.parse_args()
    os.environ.update(AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    out, logs = sys.stdout, LogCounter()
    print(f"us-east-1 list prices as of {PRICES_AS_OF}; {arguments.tasks} tasks per flow", file=out)
    measured: list[Measurement] = []
    flows = cases()
    sys.stdout = logs  # what the functions print is what Lambda ships to Logs
    try:
        for case in flows:
            measured.append(run(case, arguments.tasks, logs))
    finally:
        sys.stdout = out
    http = through_http_api(measured[0])
    report(replace(flows[0], title=flows[0].title.replace(REST_API, HTTP_API)), http, out)
    for case, measurement in zip(flows, measured, strict=True):
        report(case, measurement, out)
    goals(measured[0], http, measured[1], out)


if __name__ == "__main__":
    main()
