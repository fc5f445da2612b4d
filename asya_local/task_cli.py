"""`asya send`, `tasks`, `status`, `watch`, `results`, `cancel`, `resume`, `rerun` and `queues`: tasks of the
running local stack, created, found, followed and changed through its gateway as any client would (what
the crew kept is `results_cli`'s)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

from rich.live import Live
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.table import Table
from rich.text import Text

from asya.live import FLY
from asya.task_record import TaskStatus
from asya_local import results_cli, stack_option
from asya_local.arguments import (
    command,
    each_input,
    json_object,
    json_value,
    likely,
    moment_argument,
    page_size,
    positive_int,
    some_id,
)
from asya_local.local_state import running_state
from asya_local.moments import SHAPES
from asya_local.queues import queue_depths
from asya_local.roles import local_client
from asya_local.screen import console, status_text
from asya_local.stack_option import add_stack_options
from asya_local.task_text import task_table

if TYPE_CHECKING:
    from asya_cdk.config import MeshConfig
    from asya_cdk.flow_config import FlowConfig

ALL_STATUSES = "all"  # `asya tasks --status`: every status, newest first across them (the default)
LISTING_FILTERS = ("status", "flow", "actor", "since", "until")
STILL_RUNNING = 3  # `asya send --wait`'s exit status for a task that had not ended when the wait ran out


class TaskCommandError(ValueError):
    """The command asks for what the mesh cannot do (a flow it has not, `--wait` with `--count`)."""


def send(args: argparse.Namespace) -> int:
    """Create tasks. Locally the mesh file is at hand, so a flow, route or list of inputs it would refuse
    is explained first; a deployed mesh's gateway refuses them itself (`--stack`: no mesh file here)."""
    target: dict[str, Any] = {"flow": args.flow} if args.flow else {"route": _actors(args.route)}
    if not args.stack:
        mesh = _running_mesh()
        target = {"flow": _flow(mesh, args.flow)} if args.flow else {"route": _route_of(mesh, args.route)}
        if args.flow and not args.each:
            _one_input(args.flow, mesh.flows[args.flow], args.payload)
    payloads = each_input(args.payload, "with --each, the payload") if args.each else [args.payload]
    if args.timeout:
        target["timeout"] = args.timeout
    bodies = [{"payload": payload, **target} for payload in payloads for _ in range(args.count)]
    gateway = stack_option.gateway(args)
    if args.wait is not None:
        if len(bodies) != 1 or args.wait <= 0:
            raise TaskCommandError("--wait takes a number of seconds above 0, for one task (no --count, no --each)")
        key = args.idempotency_key or new_key()
        return _ended(gateway.run_task(bodies[0], args.wait, idempotency_key=key), args.wait)
    if len(bodies) == 1:
        print(gateway.create_task(bodies[0], args.idempotency_key or new_key())["id"])
        return 0
    if args.idempotency_key:
        raise TaskCommandError("--idempotency-key names one task: leave out --count and --each")
    with Progress(console=console) as progress:
        task = progress.add_task(f"creating {len(bodies)} tasks", total=len(bodies))
        for body in bodies:
            print(gateway.create_task(body, new_key())["id"], file=sys.stdout)
            progress.advance(task)
    return 0


def _running_mesh() -> MeshConfig:
    """The running local stack's mesh file, read to explain a refusal before the gateway is asked. The
    models load here, once a stack is found to run, so that `asya status` and the others start without
    them."""
    config = running_state()["config"]
    from asya_cdk.loading import load_mesh

    return load_mesh(config).config


def _flow(mesh: MeshConfig, name: str) -> str:
    """A flow of the mesh file, or the refusal naming the flows there are."""
    if name not in mesh.flows:
        known = ", ".join(mesh.flows) or "none"
        raise TaskCommandError(f"unknown flow {name!r} (flows: {known}){likely(name, mesh.flows)}")
    return name


def _actor(mesh: MeshConfig, name: str) -> str:
    """An actor a task's route may reach in this mesh (`MeshConfig.routed`), or the refusal naming them."""
    if name not in mesh.routed:
        raise TaskCommandError(f"unknown actor {name!r} (actors: {', '.join(mesh.routed)}){likely(name, mesh.routed)}")
    return name


def _route_of(mesh: MeshConfig, given: str) -> list[str]:
    """`--route a,b,c` as the gateway takes it: actors of the mesh, and of the crew only x-pause."""
    route = _actors(given)
    refused = [actor for actor in route if actor not in mesh.routed]
    if not route or refused:
        named = f"names what no route may: {', '.join(refused)}" if refused else "names no actor"
        hint = likely(refused[0], mesh.routed) if len(refused) == 1 else ""
        raise TaskCommandError(f"--route {named} (a route may name: {', '.join(mesh.routed)}){hint}")
    return route


def _actors(given: str) -> list[str]:
    """`--route a,b,c` as a list of actors."""
    return [actor.strip() for actor in given.split(",") if actor.strip()]


def _one_input(name: str, flow: FlowConfig, payload: Any) -> None:
    """A list given to a flow that takes one object is most likely a file of inputs, as the examples'
    `inputs.json` is: say how to send one, or each, rather than pass on the schema's refusal."""
    if isinstance(payload, list) and flow.input_schema.get("type") == "object":
        raise TaskCommandError(
            f"the payload is a list of {len(payload)} inputs, and flow {name!r} takes one object: "
            "send one of them, or add --each to send each as its own task"
        )


def _ended(task: dict[str, Any], waited: float) -> int:
    """Show a task waited for; the exit status `--wait` promises: 0 if it succeeded, 1 if it failed or
    was canceled, `STILL_RUNNING` if it had not ended."""
    console.print(task_table(task))
    if not task["terminal"]:
        console.print(f"still {task['status']} after {waited:g} s: `asya watch {task['id']}` follows it")
        return STILL_RUNNING
    return 0 if task["status"] == TaskStatus.SUCCEEDED else 1


def rerun(args: argparse.Namespace) -> int:
    """Run an ended task again (its flow, or the route it was started on) with the input it was started
    with or `--payload`; prints the new task's id, or with `--wait` the new task as it ended."""
    if args.wait is not None and args.wait <= 0:
        raise TaskCommandError("--wait takes a number of seconds above 0")
    gateway = stack_option.gateway(args)
    given = hasattr(args, "payload")  # `--payload null` is an input too
    task_id = gateway.task_id(args.id)
    started = gateway.rerun(task_id, getattr(args, "payload", None), given=given, idempotency_key=new_key())
    if args.wait is None:
        print(started["id"])
        return 0
    return _ended(gateway.wait(dict(started["task"]), time.monotonic() + args.wait), args.wait)


def new_key() -> str:
    """A fresh idempotency key: each task `asya send` creates is created once, whatever it retries."""
    return str(uuid.uuid4())


def status(args: argparse.Namespace) -> int:
    gateway = stack_option.gateway(args)
    task = gateway.task(gateway.task_id(args.id))
    if task is None:
        console.print(f"[red]no task {args.id}[/red]")
        return 1
    console.print(task_table(task))
    return 0


def watch(args: argparse.Namespace) -> int:
    """A bar for the task's progress, its FLY messages above it, then the task as it ended."""
    gateway = stack_option.gateway(args)
    args.id = gateway.task_id(args.id)
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
    console.print(task_table(task))
    return 0 if task.get("status") == "succeeded" else 1


def _fly_line(event: Any) -> Text:
    """`actor: data` for a FLY event (`{"actor": ..., "data": ...}`); text data is printed as is."""
    data = event.get("data") if isinstance(event, dict) else event
    line = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    actor = event.get("actor") if isinstance(event, dict) else None
    return Text.assemble((f"{actor}: ", "cyan"), line) if actor else Text(line)


def queues(args: argparse.Namespace) -> int:
    """Queue depths, read from SQS with the local administrator's credentials, or with `--stack` the
    caller's (`sqs:ListQueues`, `sqs:GetQueueAttributes`)."""
    if args.stack:
        mesh = stack_option.deployed(args)
        sqs, namespace = mesh.client("sqs"), mesh.namespace
    else:
        state = running_state()
        sqs, namespace = local_client("sqs", state["endpoint"]), state["namespace"]

    def depths() -> dict[str, tuple[int, int, int]]:
        return queue_depths(sqs, namespace)

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


def tasks(args: argparse.Namespace) -> int:
    """Tasks newest first, of every status unless one is asked for, fan-out branches left out: one page
    (from `--cursor` if given), or every page with `--all`; when more are left, the command that shows
    the next page."""
    if not args.stack and (args.flow or args.actor):  # a name the mesh file lacks would list nothing
        mesh = _running_mesh()
        if args.flow:
            _flow(mesh, args.flow)
        if args.actor:
            _actor(mesh, args.actor)
    gateway = stack_option.gateway(args)
    where = {name: getattr(args, name) for name in LISTING_FILTERS}
    found: list[dict[str, Any]] = []
    cursor = args.cursor
    while True:
        page = gateway.task_page(**where, cursor=cursor, limit=args.limit)
        found += page["tasks"]
        cursor = page["next_cursor"]
        if not (args.all and cursor):
            break
    console.print(tasks_table(found, args.status))
    if cursor:
        console.print(f"more tasks: {shlex.join(next_page(where, args.limit, cursor))}", soft_wrap=True, markup=False)
    return 0


def tasks_table(found: list[dict[str, Any]], status: str) -> Table:
    shown = "tasks" if status == ALL_STATUSES else f"{status} tasks"
    table = Table(title=f"{shown}: {len(found)}, newest first", title_justify="left")
    for column in ("id", "flow", "status", "actor", "progress", "started", "updated"):
        table.add_column(column, overflow="fold")
    for task in found:
        table.add_row(
            str(task["id"]),
            str(task.get("flow") or ""),
            status_text(str(task.get("status", ""))),
            str(task.get("actor") or ""),
            f"{float(task.get('progress') or 0):g} %",
            str(task.get("created_at") or ""),
            str(task.get("updated_at") or ""),
        )
    return table


def next_page(where: dict[str, str | None], limit: int, cursor: str) -> list[str]:
    """The `asya tasks` command line of the page after this one: the same filters (times as the
    moments they were resolved to, so that `1h` does not move), and the cursor, joined to its option:
    a cursor may begin with `-`, which on its own would read as an option."""
    given = [item for name, value in where.items() if value for item in (f"--{name}", value)]
    return ["asya", "tasks", *given, "--limit", str(limit), f"--cursor={cursor}"]


def cancel(args: argparse.Namespace) -> int:
    """Cancel a task that has not ended; one that has is left as it is, and said so (the gateway's
    cancel would answer with it unchanged, as a cancel is idempotent there)."""
    gateway = stack_option.gateway(args)
    task_id = gateway.task_id(args.id)
    idle = _nothing_to(gateway.task(task_id), task_id, "cancel")
    if idle:
        console.print(f"[red]{idle}[/red]", highlight=False)
        return 1
    canceled = gateway.cancel(task_id)
    console.print(task_table(canceled))
    if canceled.get("status") != TaskStatus.CANCELED:
        console.print(f"[red]task {task_id[:8]} ended ({canceled.get('status')}) before it was canceled[/red]")
        return 1
    return 0


def resume(args: argparse.Namespace) -> int:
    """Resume a paused task; any other is said not to be paused, without asking the gateway (which would
    refuse it with 409)."""
    gateway = stack_option.gateway(args)
    task_id = gateway.task_id(args.id)
    idle = _nothing_to(gateway.task(task_id), task_id, "resume")
    if idle:
        console.print(f"[red]{idle}[/red]", highlight=False)
        return 1
    console.print(task_table(gateway.resume(task_id, args.input)))
    return 0


def _nothing_to(task: dict[str, Any] | None, task_id: str, action: str) -> str | None:
    """Why `action` (cancel, resume) has nothing to do for the task, in a person's words; None if it has."""
    if task is None:
        return f"no task {task_id}"
    state = task.get("status")
    if task.get("terminal"):
        return f"task {task_id[:8]} already ended ({state}); nothing to {action}"
    if action == "resume" and state != TaskStatus.PAUSED:
        return f"task {task_id[:8]} is {state}, not paused; nothing to resume"
    return None


def add_parsers(commands: Any) -> None:
    send_command = command(
        commands,
        "send",
        "create tasks through the gateway; prints their ids",
        'asya send \'{"product": "kettle", "reviews": ["Broken"]}\' --flow triage-reviews --wait 30',
        "asya send @payload.json --route split,score --count 10",
        "asya send @examples/reviews/inputs.json --flow triage-reviews --each",
    )
    send_command.add_argument("payload", type=json_value, help="the payload: JSON, or @file.json")
    target = send_command.add_mutually_exclusive_group(required=True)
    target.add_argument("--flow", help="a flow of the mesh file")
    target.add_argument("--route", help="comma-separated actors")
    send_command.add_argument("--count", type=positive_int, default=1, help="create this many tasks")
    send_command.add_argument(
        "--each", action="store_true", help="the payload is a JSON list: each item becomes a task of its own"
    )
    send_command.add_argument(
        "--idempotency-key", help="the task's key: sent again with it, the create makes no second task (default: new)"
    )
    send_command.add_argument("--timeout", type=float, help="seconds until the task's deadline (default: the flow's)")
    send_command.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="wait up to SECONDS for the task to end and show it with its result; "
        "exit 0 if it succeeded, 1 if it failed or was canceled, 3 if it is still running",
    )
    listing = command(
        commands,
        "tasks",
        "tasks newest first, of every status unless one is asked for; fan-out branches left out",
        "asya tasks --status failed --flow triage-reviews --since 1h",
        "asya tasks --actor score --since '2026-11-26 09:00' --until '2026-11-26 10:00' --all",
    )
    listing.add_argument(
        "--status",
        choices=[ALL_STATUSES, *map(str, TaskStatus)],
        default=ALL_STATUSES,
        help="only tasks of this status",
    )
    listing.add_argument("--flow", help="only tasks of this flow")
    listing.add_argument("--actor", help="only tasks whose route reached this actor (visited it, or is at it)")
    listing.add_argument("--since", type=moment_argument, help=f"only tasks started at or after: {SHAPES}")
    listing.add_argument("--until", type=moment_argument, help="only tasks started at or before (the same shapes)")
    listing.add_argument("--limit", type=page_size, default=50, help="tasks per page, 1 to 100")
    pages = listing.add_mutually_exclusive_group()
    pages.add_argument("--cursor", help="the page after the one that printed it (as `more tasks:` shows it)")
    pages.add_argument("--all", action="store_true", help="every page, not only the first")
    for name, summary, example in (
        ("status", "a task as the gateway reports it", "asya status 5f0c9a2e-…"),
        ("watch", "follow a task live until it ends; exit 0 if it succeeded", "asya watch 5f0c9a2e-…"),
        ("results", "what x-sink and x-sump kept for an envelope and its branches", "asya results 5f0c9a2e-…"),
        ("cancel", "cancel a task and its fan-out branches", "asya cancel 5f0c9a2e-…"),
    ):
        by_id = command(commands, name, summary, example)
        by_id.add_argument(
            "id",
            type=some_id,
            help="the task's id, or its first characters (a recent task's short id, as tables show it)",
        )
        add_stack_options(by_id)
    resuming = command(
        commands,
        "resume",
        "give a paused task what it waits for, and let it go on",
        "asya resume 5f0c9a2e-… '{\"approved\": true}'",
    )
    resuming.add_argument("id", type=some_id, help="the paused task's id, or its first characters")
    resuming.add_argument("input", type=json_object, help="the fields it asked for: a JSON object, or @file.json")
    again = command(
        commands,
        "rerun",
        "run an ended task again, as a new task of its flow (or route), with its input or a new one",
        'asya rerun 5f0c9a2e --payload \'{"product": "kettle"}\' --wait 30',
    )
    again.add_argument("id", type=some_id, help="the ended task's id, or its first characters")
    again.add_argument(
        "--payload",
        type=json_value,
        default=argparse.SUPPRESS,
        help="a new input: JSON, or @file.json (default: the input the task was started with)",
    )
    again.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="wait up to SECONDS for the new task to end; exit status as for `asya send --wait`",
    )
    queue_command = command(commands, "queues", "the mesh's queue depths", "asya queues --watch")
    queue_command.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    for deployable in (send_command, listing, resuming, again, queue_command):
        add_stack_options(deployable)


COMMANDS = {
    "send": send,
    "tasks": tasks,
    "status": status,
    "watch": watch,
    "results": results_cli.results,
    "cancel": cancel,
    "resume": resume,
    "rerun": rerun,
    "queues": queues,
}
