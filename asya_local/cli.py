"""`asya`: run a mesh on this machine and work with it.

    asya up      [--config FILE] [--port N] [--faults FILE|SPEC]   start the local stack; Ctrl-C stops it
    asya send    PAYLOAD (--flow NAME | --route a,b) [--count N]   create tasks; prints their ids
    asya status  ID                              a task as the gateway reports it
    asya watch   ID                              follow a task live until it ends
    asya results ID                              what x-sink / x-sump kept for an envelope
    asya queues  [--watch]                       queue depths
    asya demo    [--config FILE] [--inputs FILE] start, send the example inputs, watch, print, stop
    asya check   [--config FILE] [--account]     AWS's limits checked, and what `cdk deploy` would create
    asya deploy  [--config FILE] [-- CDK ARGS]   asya check, Docker for image actors, then cdk deploy
    asya smoke   --stack NAME [--flow NAME]...    one task per flow through a deployed mesh (AWS or local)
    asya console [--stack NAME] [--port N]       the mesh, its queues and tasks, live, in a browser
    asya secrets set NAME [VALUE] [--config FILE]  a secret's local value (stdin if VALUE is left out)

`asya up` writes `.asya/local.json` (endpoint, namespace, bucket, gateway URL and API key, console
URL, worker log) so the other commands find it. While the mesh runs, `asya up` and `asya demo` show
it as a live view (`asya_local.live_view`); what the workers print goes to the worker log
(`.asya/<namespace>.log`, `asya_local.worklog`), and only errors to the screen. `asya up` also serves
the console (`asya_local.console`). Tasks are created and followed through the status gateway's API, as any
client would on AWS. Argument parsing is the standard library's argparse; HTTP is `httpx2`; tables,
live views and progress bars are `rich`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.table import Table
from rich.text import Text

from asya.envelope import visited
from asya.live import FLY
from asya.results import result_prefix
from asya.task_record import TaskStatus
from asya_cdk.config import MeshConfigError, load_mesh
from asya_cdk.libraries import LibrariesError
from asya_local import deploy_cli, secrets_cli, smoke, sump_cli, worklog
from asya_local.check import check as check_mesh
from asya_local.console.activity import ActivityCounter
from asya_local.console.app import Console as MeshConsole
from asya_local.console.deployed import deployed_console
from asya_local.console.local import LocalMesh, follow_log, local_console
from asya_local.console.server import serve
from asya_local.fixtures import LocalSecretError
from asya_local.functions.faults import FaultSpec, FaultSpecError, load_faults
from asya_local.functions.lambda_shapes import REGION
from asya_local.gateway_client import GatewayClient, GatewayError, GatewayUnreachableError
from asya_local.live_view import LiveView
from asya_local.results import KeptResults
from asya_local.roles import LOCAL_CREDENTIALS, local_client
from asya_local.smoke import SmokeError
from asya_local.stack import LocalStack, free_port, queue_depths
from asya_local.sump_cli import SumpCommandError
from asya_local.worklog import WorkerLog

DEFAULT_CONFIG = Path("examples/catalogue/mesh.yaml")
INPUTS_FILE = "inputs.json"  # the demo's payloads, beside the mesh file unless --inputs says otherwise
STATE_FILE = Path(".asya/local.json")
STILL_RUNNING = 3  # `asya send --wait`'s exit status for a task that had not ended when the wait ran out
console = Console() if sys.stdout.isatty() else Console(width=160)  # logs and CI: no 80-column squeeze


def _add_send_parser(commands: Any) -> None:
    send = commands.add_parser("send", help="create tasks through the gateway; prints their ids")
    send.add_argument("payload", help="JSON payload, or @file.json")
    target = send.add_mutually_exclusive_group(required=True)
    target.add_argument("--flow", help="a flow of the mesh file")
    target.add_argument("--route", help="comma-separated actors")
    send.add_argument("--count", type=int, default=1, help="create this many tasks")
    send.add_argument(
        "--idempotency-key", help="the task's key: sent again with it, the create makes no second task (default: new)"
    )
    send.add_argument("--timeout", type=float, help="seconds until the task's deadline (default: the flow's)")
    send.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="wait up to SECONDS for the task to end and show it with its result; "
        "exit 0 if it succeeded, 1 if it failed or was canceled, 3 if it is still running",
    )


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
        command.add_argument("--gateway-port", type=int, default=0, help="the gateway's port; 0: any free")
        command.add_argument(
            "--faults", type=_fault_spec, help="fault spec (YAML/JSON file or inline) applied to the workers"
        )
    up.add_argument("--console-port", type=int, default=0, help="the console's port; 0: any free")
    demo.add_argument("--inputs", type=Path, help=f"JSON list of payloads (default: {INPUTS_FILE} beside the mesh)")
    demo.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the mesh to drain")
    _add_send_parser(commands)
    status = commands.add_parser("status", help="a task as the gateway reports it")
    status.add_argument("id")
    watch = commands.add_parser("watch", help="follow a task live until it ends; exit 0 if it succeeded")
    watch.add_argument("id")
    results = commands.add_parser("results", help="show what x-sink / x-sump kept for an envelope")
    results.add_argument("id")
    queues = commands.add_parser("queues", help="queue depths")
    queues.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    check = commands.add_parser("check", help="check the mesh file against AWS's limits; show what deploy creates")
    check.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="mesh file")
    check.add_argument(
        "--account", action="store_true", help="also the account's Lambda concurrency (your AWS credentials)"
    )
    deploy_cli.add_parser(commands, DEFAULT_CONFIG)
    smoke_test = commands.add_parser(
        "smoke", help="one task per flow through a deployed mesh: pass/fail per flow; cleans up its results"
    )
    smoke_test.add_argument("--stack", required=True, help="the mesh's stack name (asya-<namespace>)")
    smoke_test.add_argument("--flow", action="append", default=[], help="only this flow (repeatable; default: all)")
    smoke_test.add_argument(
        "--timeout",
        type=float,
        default=smoke.DEFAULT_TIMEOUT_SECONDS,
        help="seconds each flow may take before it fails",
    )
    smoke_test.add_argument("--allow-skip", action="store_true", help="a flow without an example input is no failure")
    console_command = commands.add_parser("console", help="the mesh, its queues and tasks, live, in a browser")
    console_command.add_argument(
        "--stack", help="a deployed mesh's stack (asya-<namespace>), with your AWS credentials; default: asya up's"
    )
    console_command.add_argument("--port", type=int, default=0, help="the console's port on 127.0.0.1; 0: any free")
    sump_cli.add_parser(commands)
    secrets_cli.add_parser(commands, DEFAULT_CONFIG)
    args = parser.parse_args(argv)
    commands_run = {
        "up": _up,
        "demo": _demo,
        "send": _send,
        "status": _status,
        "watch": _watch,
        "results": _results,
        "queues": _queues,
        "check": _check,
        "deploy": _deploy,
        "smoke": _smoke,
        "sump": _sump,
        "console": _console,
        "secrets": _secrets,
    }
    try:
        return commands_run[args.command](args)
    except (
        MeshConfigError,
        LocalStateError,
        GatewayUnreachableError,
        SmokeError,
        SumpCommandError,
        LocalSecretError,
        LibrariesError,
    ) as exc:
        console.print(f"[red]asya: {exc}[/red]")
        return 2
    except GatewayError as exc:
        console.print(f"[red]asya: the gateway refused: {exc}[/red]")
        return 1


def _deploy(args: argparse.Namespace) -> int:
    return deploy_cli.run(args, console)


def _secrets(args: argparse.Namespace) -> int:
    return secrets_cli.run(args, _local_state(), console)


def _fault_spec(source: str) -> FaultSpec:
    try:
        return load_faults(source)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _check(args: argparse.Namespace) -> int:
    if not args.account:
        return check_mesh(args.config, console)
    import boto3

    return check_mesh(args.config, console, account=boto3.client("lambda"))


class LocalStateError(RuntimeError):
    """No local stack is running (or its state file is unreadable)."""


def _print_error(source: str, line: str) -> None:
    """A worker's error line, on screen (above the live view while one is shown)."""
    console.print(Text.assemble((f"{source:>10}", "red"), " │ ", worklog.shown(line)), highlight=False)


@dataclass
class Started:
    """A local stack as `asya up` and `asya demo` run it: its worker log and what the log's metric
    lines count."""

    stack: LocalStack
    log: WorkerLog
    activity: ActivityCounter

    @cached_property
    def console(self) -> MeshConsole:
        """One for the web console and the live view, which then share each read of the figures."""
        return local_console(LocalMesh.of_stack(self.stack, self.log.path), self.activity)

    def live_view(self, header: list[str]) -> LiveView:
        dynamodb = self.stack.client("dynamodb")
        return LiveView(self.console, dynamodb, self.stack.outputs.get("TasksTable"), header)

    def stop(self) -> None:
        self.stack.stop()
        self.log.close()


def _start(args: argparse.Namespace) -> Started:
    mesh = load_mesh(args.config)
    activity = ActivityCounter(mesh.config.namespace)
    log = WorkerLog(STATE_FILE.parent / f"{mesh.config.namespace}.log", _print_error, taps=[activity.take])
    stack = LocalStack(
        mesh,
        port=args.port or free_port(),
        workers_per_function=args.workers,
        on_line=log,
        gateway_port=args.gateway_port or free_port(),
        faults=args.faults,
    )
    console.print(f"worker log: {log.path}", highlight=False)
    with console.status("starting") as status:
        try:
            stack.start(progress=status.update)
        except BaseException:
            log.close()
            raise
    return Started(stack, log, activity)


def write_state(stack: LocalStack, config: Path, **more: str) -> None:
    """`.asya/local.json`: where the running local stack is, for the other commands."""
    STATE_FILE.parent.mkdir(exist_ok=True)
    state = {
        "endpoint": stack.endpoint,
        "stack": stack.stack_name,
        "namespace": stack.namespace,
        "bucket": stack.results_bucket,
        "tasks_table": stack.outputs.get("TasksTable", ""),
        "spark_batches_table": stack.outputs.get("SparkBatchesTable", ""),
        "config": str(config.resolve()),
        # the local administrator's key: what a client of this endpoint signs with (real AWS
        # credentials in the environment are refused here, with InvalidClientTokenId)
        "aws_access_key_id": LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        **more,
    }
    if stack.gateway_url is not None:
        state |= {"gateway_url": stack.gateway_url, "api_key": stack.api_key}
    STATE_FILE.touch(mode=0o600)  # it holds the API key
    STATE_FILE.write_text(json.dumps(state, indent=2))


def _up(args: argparse.Namespace) -> int:
    started = _start(args)
    stack = started.stack
    served = serve(started.console, args.console_port) if stack.gateway_url is not None else None
    write_state(stack, args.config, log=str(started.log.path), **({"console_url": served.url} if served else {}))
    key = " ".join(f"{name}={value}" for name, value in LOCAL_CREDENTIALS.items())
    header = [
        f"mesh '{stack.namespace}' is up at {stack.endpoint} (region {REGION}); Ctrl-C stops it",
        f"its clients sign with: {key}",
    ]
    if stack.gateway_url is not None and served is not None:
        header += [
            f"console: {served.url}",
            f"gateway: {stack.gateway_url}/api/v1   API key: {stack.api_key}",
            "send work: asya send '{...}' --flow <flow>    then: asya watch <id>",
        ]
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        if console.is_terminal:
            view = started.live_view([*header, f"worker log: {started.log.path} (errors are shown here too)"])
            with Live(view, console=console, refresh_per_second=1):
                stopped.wait()
        else:  # a log, not a screen: the header once, errors as they come
            for line in header:
                console.print(line, highlight=False)
            stopped.wait()
    except KeyboardInterrupt:
        pass
    finally:
        console.print("stopping…")
        if served is not None:
            served.stop()
        started.stop()
        STATE_FILE.unlink(missing_ok=True)
    return 0


def _console(args: argparse.Namespace) -> int:
    """Serve the console of the local stack, or of a deployed one, until Ctrl-C."""
    state = _local_state()
    stop = threading.Event()
    if args.stack is None or (state is not None and state.get("stack") == args.stack):
        if state is None:
            raise LocalStateError(f"no local stack found ({STATE_FILE} missing): start one with `asya up`")
        where = LocalMesh.of_state(state)
        activity = ActivityCounter(where.mesh.config.namespace)
        if where.log is not None:
            follow_log(where.log, activity.take, stop)
        mesh_console = local_console(where, activity)
    else:
        import boto3

        mesh_console = deployed_console(smoke.discover(args.stack, state), boto3.Session())
    served = serve(mesh_console, args.port)
    console.print(f"console of {mesh_console.where}: {served.url}   (Ctrl-C stops it)", highlight=False)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        served.stop()
    return 0


def _demo(args: argparse.Namespace) -> int:
    payloads = json.loads((args.inputs or args.config.parent / INPUTS_FILE).read_text())
    started = _start(args)
    stack = started.stack
    try:
        flow_name, flow = next(iter(stack.mesh.config.flows.items()))
        if stack.gateway_url is None:
            raise LocalStateError("this mesh deploys no gateway to send tasks through")
        gateway = GatewayClient(stack.gateway_url, stack.api_key)
        ids = [gateway.create_task({"flow": flow_name, "payload": payload})["id"] for payload in payloads]
        console.print(f"created {len(ids)} tasks of flow [bold]{flow_name}[/bold]: {' → '.join(flow.route)}")
        view = started.live_view([f"demo of mesh '{stack.namespace}': flow {flow_name}"])
        with Live(view, console=console, refresh_per_second=1):  # redrawn once a second, by Live's thread
            drained = stack.wait_until_idle(args.timeout)
        console.print()
        kept = stack.kept_results().all()
        console.print(_results_table(kept))
        failed = [doc for doc in kept if doc["outcome"] != "succeeded"]
        if not drained or failed:
            console.print(f"[red]{'mesh did not drain; ' if not drained else ''}{len(failed)} not succeeded[/red]")
            return 1
        console.print(f"[green]{len(kept)} results from {len(ids)} inputs, all succeeded[/green]")
        return 0
    finally:
        started.stop()


def _state() -> dict[str, str]:
    state = _local_state()
    if state is None:
        raise LocalStateError(f"no local stack found ({STATE_FILE} missing): start one with `asya up`")
    return state


def _local_state() -> dict[str, str] | None:
    try:
        return dict(json.loads(STATE_FILE.read_text()))
    except (OSError, ValueError):
        return None


def _gateway(state: dict[str, str]) -> GatewayClient:
    if "gateway_url" not in state:
        raise LocalStateError("the running stack serves no gateway (its mesh deploys none)")
    return GatewayClient(state["gateway_url"], state["api_key"])


def _send(args: argparse.Namespace) -> int:
    state = _state()
    mesh = load_mesh(state["config"])
    raw = Path(args.payload[1:]).read_text() if args.payload.startswith("@") else args.payload
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise LocalStateError(f"the payload is not JSON: {exc}") from None
    body: dict[str, Any] = {"payload": payload}
    if args.flow:
        if args.flow not in mesh.config.flows:
            raise LocalStateError(f"unknown flow {args.flow!r} (flows: {', '.join(mesh.config.flows) or 'none'})")
        body["flow"] = args.flow
    else:
        route = [actor.strip() for actor in args.route.split(",") if actor.strip()]
        unknown = [actor for actor in route if actor not in mesh.config.actors]
        if not route or unknown:
            raise LocalStateError(f"--route names unknown actors: {', '.join(unknown) or '(empty)'}")
        body["route"] = route
    if args.timeout:
        body["timeout"] = args.timeout
    gateway = _gateway(state)
    if args.wait is not None:
        if args.count != 1 or args.wait <= 0:
            raise LocalStateError("--wait takes a number of seconds above 0, for one task (no --count)")
        ended = gateway.run_task(body, args.wait, idempotency_key=args.idempotency_key or new_key())
        console.print(_task_table(ended))
        if not ended["terminal"]:
            console.print(f"still {ended['status']} after {args.wait:g} s: `asya watch {ended['id']}` follows it")
            return STILL_RUNNING
        return 0 if ended["status"] == TaskStatus.SUCCEEDED else 1
    if args.count == 1:
        print(gateway.create_task(body, args.idempotency_key or new_key())["id"])
        return 0
    if args.idempotency_key:
        raise LocalStateError("--idempotency-key names one task: leave out --count")
    with Progress(console=console) as progress:
        task = progress.add_task(f"creating {args.count} tasks", total=args.count)
        for _ in range(args.count):
            print(gateway.create_task(body, new_key())["id"], file=sys.stdout)
            progress.advance(task)
    return 0


def new_key() -> str:
    """A fresh idempotency key: each task `asya send` creates is created once, whatever it retries."""
    return str(uuid.uuid4())


def _status(args: argparse.Namespace) -> int:
    task = _gateway(_state()).task(args.id)
    if task is None:
        console.print(f"[red]no task {args.id}[/red]")
        return 1
    console.print(_task_table(task))
    return 0


def _watch(args: argparse.Namespace) -> int:
    """A bar for the task's progress, its FLY messages above it, then the task as it ended."""
    gateway = _gateway(_state())
    if gateway.task(args.id) is None:
        console.print(f"[red]no task {args.id}[/red]")
        return 1
    task: dict[str, Any] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TextColumn("{task.fields[at]}"))
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(args.id[:8], total=100, at="connecting")
        for kind, data in gateway.follow(args.id):
            if kind == FLY:
                progress.console.print(_fly_line(data))
                continue
            task = data
            at = str(task.get("status")) + (
                f" at {task['actor']}" if task.get("actor") and not task.get("terminal") else ""
            )
            progress.update(bar, completed=float(task.get("progress") or 0), at=at)
    console.print(_task_table(task))
    return 0 if task.get("status") == "succeeded" else 1


def _sump(args: argparse.Namespace) -> int:
    return sump_cli.run(args, _gateway(_state()), console)


def _smoke(args: argparse.Namespace) -> int:
    """Find the mesh from its stack, run a task per flow, print the table; see `asya_local.smoke`."""
    mesh = smoke.discover(args.stack, _local_state())
    runs = smoke.plan(mesh, args.flow)
    console.print(f"smoke test of {mesh.stack} in {mesh.where}: {len(runs)} flow(s)", highlight=False)
    with Live(smoke.report(mesh, runs), console=console, refresh_per_second=2) as live:
        smoke.run(mesh, runs, timeout=args.timeout, on_change=lambda: live.update(smoke.report(mesh, runs)))
    return smoke.exit_code(runs, args.allow_skip)


def _fly_line(event: Any) -> Text:
    """`actor: data` for a FLY event (`{"actor": ..., "data": ...}`); text data is printed as is."""
    data = event.get("data") if isinstance(event, dict) else event
    line = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    actor = event.get("actor") if isinstance(event, dict) else None
    return Text.assemble((f"{actor}: ", "cyan"), line) if actor else Text(line)


STATUS_STYLES = {"succeeded": "green", "failed": "red", "canceled": "yellow", "paused": "magenta"}


def _task_table(task: dict[str, Any]) -> Table:
    """The fields of a task a person looks at, in that order; empty ones are left out."""
    table = Table(show_header=False, title=f"task {task.get('id', '')}", title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    status = str(task.get("status", ""))
    rows: list[tuple[str, str | Text]] = [
        ("flow", str(task.get("flow") or "")),
        ("status", Text(status, style=STATUS_STYLES.get(status, ""))),
        ("progress", f"{float(task.get('progress') or 0):g} %"),
        ("actor", str(task.get("actor") or "")),
        ("route", _route(task.get("route"))),
        ("branches", _branches(task.get("branches"))),
        ("output", json.dumps(task["output"], ensure_ascii=False) if "output" in task else ""),
        ("result", str(task.get("result") or "")),
        ("reason", str(task.get("reason") or "")),
        ("error", json.dumps(task["error"], ensure_ascii=False) if task.get("error") else ""),
        ("pause", json.dumps(task["pause"], ensure_ascii=False) if task.get("pause") else ""),
        ("deadline", str(task.get("deadline_at") or "")),
        ("updated", str(task.get("updated_at") or "")),
    ]
    for name, value in rows:
        if value:
            table.add_row(name, value)
    return table


def _route(route: Any) -> Text:
    """Actors done, the current one (bold), actors to come."""
    if not isinstance(route, dict):
        return Text()
    steps = [
        *((actor, "dim") for actor in route.get("prev", [])),
        *([(route["curr"], "bold")] if route.get("curr") else []),
        *((actor, "") for actor in route.get("next", [])),
    ]
    return Text(" → ").join(Text(actor, style=style) for actor, style in steps)


def _branches(branches: Any) -> str:
    if not isinstance(branches, dict):
        return ""
    counts = ("open", "succeeded", "failed", "canceled")
    return f"{branches.get('total', 0)} in all: " + ", ".join(f"{branches.get(c, 0)} {c}" for c in counts)


def _results(args: argparse.Namespace) -> int:
    state = _state()
    s3, dynamodb = local_client("s3", state["endpoint"]), local_client("dynamodb", state["endpoint"])
    kept = KeptResults(s3, state["bucket"], state["namespace"], dynamodb, state.get("tasks_table")).all()
    own_prefix = result_prefix(state["namespace"], args.id)
    own = [doc for doc in kept if doc["key"].startswith(own_prefix) or doc["envelope"].get("id") == args.id]
    children = [doc for doc in kept if doc["envelope"].get("parent_id") == args.id]
    if not own and not children:
        console.print(f"no results yet for {args.id}")
        return 1
    for doc in [*own, *children]:
        _print_result(doc)
    return 0


def _print_result(doc: dict[str, Any]) -> None:
    try:
        console.print_json(orjson.dumps({"key": doc["key"], **doc["envelope"]}).decode())
    except orjson.JSONEncodeError:  # nested deeper than the printer goes (x-sump keeps such bodies)
        console.print(f"{doc['key']}: {doc['text']}", markup=False, highlight=False)


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
        table.add_row(
            envelope["id"][:8],
            (envelope.get("parent_id") or "")[:8],
            doc["outcome"],
            " ".join(visited(envelope["route"])),
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
