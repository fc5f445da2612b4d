"""`asya`: run a mesh on this machine and work with it.

    asya up      [--config FILE] [--port N]      start the local stack; Ctrl-C stops it
    asya send    PAYLOAD (--flow NAME | --route a,b) [--count N]
    asya results ID                              what x-sink / x-sump kept for an envelope
    asya queues  [--watch]                       queue depths
    asya demo    [--config FILE] [--inputs FILE] start, send the example inputs, watch, print, stop

`asya up` writes `.asya/local.json` (endpoint, namespace, bucket) so the other commands find it.
Argument parsing is the standard library's argparse; tables, live views and progress bars are `rich`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from asya.envelope import rfc3339, utc_now
from asya.results import result_prefix
from asya_cdk.config import LoadedMesh, MeshConfigError, load_mesh
from asya_local.stack import LocalStack, free_port, local_client, queue_depths

DEFAULT_CONFIG = Path("examples/reviews/mesh.yaml")
DEFAULT_INPUTS = Path("examples/reviews/inputs.json")
STATE_FILE = Path(".asya/local.json")
console = Console() if sys.stdout.isatty() else Console(width=160)  # logs and CI: no 80-column squeeze


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="asya", description="Run an asya mesh on this machine.")
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start the local stack until Ctrl-C")
    demo = commands.add_parser("demo", help="start, send the example inputs, show them flowing, print, stop")
    for command in (up, demo):
        command.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="mesh file")
        command.add_argument(
            "--port", type=int, default=4566 if command is up else 0, help="endpoint port; 0: any free"
        )
        command.add_argument("--workers", type=int, default=1, help="execution environments per function")
    demo.add_argument("--inputs", type=Path, default=DEFAULT_INPUTS, help="JSON list of payloads")
    demo.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the mesh to drain")
    send = commands.add_parser("send", help="send a payload into the mesh; prints the envelope id")
    send.add_argument("payload", help="JSON payload, or @file.json")
    target = send.add_mutually_exclusive_group(required=True)
    target.add_argument("--flow", help="a flow of the mesh file")
    target.add_argument("--route", help="comma-separated actors")
    send.add_argument("--count", type=int, default=1, help="send this many envelopes")
    send.add_argument("--timeout", type=float, help="seconds until the task's deadline (default: the flow's)")
    results = commands.add_parser("results", help="show what x-sink / x-sump kept for an envelope")
    results.add_argument("id")
    queues = commands.add_parser("queues", help="queue depths")
    queues.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    args = parser.parse_args(argv)
    try:
        handler = {"up": _up, "demo": _demo, "send": _send, "results": _results, "queues": _queues}
        return handler[args.command](args)
    except (MeshConfigError, LocalStateError) as exc:
        console.print(f"[red]asya: {exc}[/red]")
        return 2


class LocalStateError(RuntimeError):
    """No local stack is running (or its state file is unreadable)."""


def _print_line(source: str, line: str) -> None:
    console.print(Text.assemble((f"{source:>10}", "cyan"), " │ ", line), highlight=False)


def _start(args: argparse.Namespace, on_line: Any = _print_line) -> LocalStack:
    mesh = load_mesh(args.config)
    stack = LocalStack(mesh, port=args.port or free_port(), workers_per_function=args.workers, on_line=on_line)
    with console.status("starting") as status:
        stack.start(progress=status.update)
    STATE_FILE.parent.mkdir(exist_ok=True)
    state = {
        "endpoint": stack.endpoint,
        "namespace": stack.namespace,
        "bucket": stack.results_bucket,
        "config": str(args.config.resolve()),
    }
    STATE_FILE.write_text(json.dumps(state, indent=2))
    return stack


def _up(args: argparse.Namespace) -> int:
    stack = _start(args)
    console.print(f"[green]mesh '{stack.namespace}' is up[/green] at {stack.endpoint} (region us-east-1)")
    console.print(_queue_table(stack.queue_depths()))
    console.print(
        f"send work: aws --endpoint-url {stack.endpoint} sqs send-message --queue-url "
        f"{stack.endpoint}/123456789012/asya-{stack.namespace}-<actor> --message-body '<envelope>'"
        "\n       or: asya send '{...}' --flow <flow>        Ctrl-C stops the mesh"
    )
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        stopped.wait()
    except KeyboardInterrupt:
        pass
    finally:
        console.print("stopping…")
        stack.stop()
        STATE_FILE.unlink(missing_ok=True)
    return 0


def _demo(args: argparse.Namespace) -> int:
    payloads = json.loads(args.inputs.read_text())
    lines: list[str] = []
    stack = _start(args, on_line=lambda source, line: lines.append(f"{source}: {line}"))
    try:
        flow_name, flow = next(iter(stack.mesh.config.flows.items()))
        sqs = stack.client("sqs")
        ids = [
            _send_one(sqs, stack.endpoint, stack.mesh, flow.route, payload, timeout=flow.timeout)
            for payload in payloads
        ]
        console.print(f"sent {len(ids)} envelopes into flow [bold]{flow_name}[/bold]: {' → '.join(flow.route)}")
        with Live(_queue_table(stack.queue_depths()), console=console, refresh_per_second=4) as live:
            drained = stack.wait_until_idle(
                args.timeout, on_tick=lambda: live.update(_queue_table(stack.queue_depths()))
            )
        for line in lines:
            console.print(f"  {line}", highlight=False, markup=False)
        kept = _all_results(stack.client("s3"), stack.results_bucket, stack.namespace)
        console.print(_results_table(kept))
        failed = [doc for doc in kept if doc["outcome"] != "succeeded"]
        if not drained or failed:
            console.print(f"[red]{'mesh did not drain; ' if not drained else ''}{len(failed)} not succeeded[/red]")
            return 1
        console.print(f"[green]{len(kept)} results from {len(ids)} inputs, all succeeded[/green]")
        return 0
    finally:
        stack.stop()
        STATE_FILE.unlink(missing_ok=True)


def _send_one(
    sqs: Any, endpoint: str, mesh: LoadedMesh, route: list[str], payload: Any, *, timeout: float | None
) -> str:
    now = utc_now()
    envelope: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "route": {"prev": [], "curr": route[0], "next": route[1:]},
        "headers": {},
        "status": {"phase": "pending", "actor": route[0], "attempt": 1, "created_at": rfc3339(now)},
        "payload": payload,
    }
    if timeout:
        from datetime import timedelta

        envelope["status"]["deadline_at"] = rfc3339(now + timedelta(seconds=timeout))
    queue_url = f"{endpoint}/123456789012/{mesh.queue_name(route[0])}"
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(envelope))
    return str(envelope["id"])


def _state() -> dict[str, str]:
    try:
        return dict(json.loads(STATE_FILE.read_text()))
    except (OSError, ValueError):
        raise LocalStateError(f"no local stack found ({STATE_FILE} missing): start one with `asya up`") from None


def _send(args: argparse.Namespace) -> int:
    state = _state()
    mesh = load_mesh(state["config"])
    raw = Path(args.payload[1:]).read_text() if args.payload.startswith("@") else args.payload
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise LocalStateError(f"the payload is not JSON: {exc}") from None
    if args.flow:
        if args.flow not in mesh.config.flows:
            raise LocalStateError(f"unknown flow {args.flow!r} (flows: {', '.join(mesh.config.flows) or 'none'})")
        route, timeout = mesh.config.flows[args.flow].route, mesh.config.flows[args.flow].timeout
    else:
        route, timeout = [actor.strip() for actor in args.route.split(",") if actor.strip()], None
        unknown = [actor for actor in route if actor not in mesh.config.actors]
        if not route or unknown:
            raise LocalStateError(f"--route names unknown actors: {', '.join(unknown) or '(empty)'}")
    timeout = args.timeout or timeout
    sqs = local_client("sqs", state["endpoint"])
    if args.count == 1:
        print(_send_one(sqs, state["endpoint"], mesh, route, payload, timeout=timeout))
        return 0
    with Progress(console=console) as progress:
        task = progress.add_task(f"sending {args.count} envelopes", total=args.count)
        for _ in range(args.count):
            print(_send_one(sqs, state["endpoint"], mesh, route, payload, timeout=timeout), file=sys.stdout)
            progress.advance(task)
    return 0


def _results(args: argparse.Namespace) -> int:
    state = _state()
    s3 = local_client("s3", state["endpoint"])
    own = _read_results(s3, state["bucket"], result_prefix(state["namespace"], args.id))
    children = [
        doc
        for doc in _all_results(s3, state["bucket"], state["namespace"])
        if doc["envelope"].get("parent_id") == args.id
    ]
    if not own and not children:
        console.print(f"no results yet for {args.id}")
        return 1
    for doc in [*own, *children]:
        console.print_json(json.dumps({"key": doc["key"], **doc["envelope"]}))
    return 0


def _read_results(s3: Any, bucket: str, prefix: str) -> list[dict[str, Any]]:
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            body = json.loads(s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read())
            outcome = item["Key"].rsplit("/", 1)[-1].removesuffix(".json")
            found.append({"key": item["Key"], "outcome": outcome, "envelope": body})
    return found


def _all_results(s3: Any, bucket: str, namespace: str) -> list[dict[str, Any]]:
    return _read_results(s3, bucket, f"results/{namespace}/")


def _queues(args: argparse.Namespace) -> int:
    state = _state()
    sqs = local_client("sqs", state["endpoint"])

    def depths() -> dict[str, tuple[int, int, int]]:
        return queue_depths(sqs, state["namespace"])

    if not args.watch:
        console.print(_queue_table(depths()))
        return 0
    with Live(_queue_table(depths()), console=console, refresh_per_second=2) as live:
        try:
            while True:
                time.sleep(0.5)
                live.update(_queue_table(depths()))
        except KeyboardInterrupt:
            return 0


def _queue_table(depths: dict[str, tuple[int, int, int]]) -> Table:
    table = Table(title="queues", title_justify="left")
    for column in ("queue", "visible", "in flight", "delayed"):
        table.add_column(column, justify="left" if column == "queue" else "right")
    for name, (visible, in_flight, delayed) in sorted(depths.items()):
        table.add_row(name, str(visible), str(in_flight), str(delayed))
    return table


def _results_table(kept: list[dict[str, Any]]) -> Table:
    table = Table(title="results (x-sink / x-sump)", title_justify="left")
    for column in ("envelope", "parent", "outcome", "hops", "payload"):
        table.add_column(column, no_wrap=column != "payload", overflow="ellipsis")
    for doc in sorted(kept, key=lambda d: json.dumps(d["envelope"]["payload"], sort_keys=True)):
        envelope = doc["envelope"]
        route = envelope["route"]
        visited = [*route["prev"], route["curr"]] if route["curr"] else route["prev"]
        table.add_row(
            envelope["id"][:8],
            (envelope.get("parent_id") or "")[:8],
            doc["outcome"],
            " ".join(visited),
            _summary(envelope["payload"]),
        )
    return table


def _summary(payload: Any) -> str:
    """`key=value` for the short scalar fields of a payload: enough to recognise it in a table."""
    if not isinstance(payload, dict):
        return json.dumps(payload, ensure_ascii=False)[:60]
    fields = [f"{k}={v}" for k, v in payload.items() if isinstance(v, str | int | float | bool) and len(str(v)) <= 24]
    return " ".join(fields) or json.dumps(payload, ensure_ascii=False)[:60]


if __name__ == "__main__":
    sys.exit(main())
