"""`asya send`, `status`, `watch`, `results`, `cancel`, `resume` and `rerun`: a task of the running
local stack (or with `--stack` a deployed mesh), created, shown, followed and changed through its
gateway as any client would (what the crew kept is `results_cli`'s; the lists, `listing_cli`'s). Each
exits by one table (`asya_local.answers`): about one task, as that task stands."""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from typing import Any

from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.text import Text

from asya.live import FLY
from asya.task_record import TaskStatus
from asya_local import results_cli, stack_option
from asya_local.answers import DONE, JSON, NOT_DONE, add_output_option, print_json, task_exit
from asya_local.arguments import command, each_input, json_object, json_value, positive_int, some_id
from asya_local.gateway_client import GatewayClient
from asya_local.running_mesh import TaskCommandError, actors, known_flow, one_input, route_of, running_mesh
from asya_local.screen import console
from asya_local.stack_option import add_stack_options
from asya_local.task_text import short_id, task_table

TASK_JSON = "the task as the gateway reports it (docs/status.md)"
EXITS_AS_IT_STANDS = "exit 0 if it succeeded, 1 if it failed or was canceled, 3 if it has not ended"


def send(args: argparse.Namespace) -> int:
    """Create tasks. Locally the mesh file is at hand, so a flow, route or list of inputs it would refuse
    is explained first; a deployed mesh's gateway refuses them itself (`--stack`: no mesh file here)."""
    target: dict[str, Any] = {"flow": args.flow} if args.flow else {"route": actors(args.route)}
    if not args.stack:
        mesh = running_mesh()
        target = {"flow": known_flow(mesh, args.flow)} if args.flow else {"route": route_of(mesh, args.route)}
        if args.flow and not args.each:
            one_input(args.flow, mesh.flows[args.flow], args.payload)
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
        return DONE
    if args.idempotency_key:
        raise TaskCommandError("--idempotency-key names one task: leave out --count and --each")
    with Progress(console=console) as progress:
        task = progress.add_task(f"creating {len(bodies)} tasks", total=len(bodies))
        for body in bodies:
            print(gateway.create_task(body, new_key())["id"], file=sys.stdout)
            progress.advance(task)
    return DONE


def _ended(task: dict[str, Any], waited: float) -> int:
    """Show a task waited for, and exit as it stands (`task_exit`: 3 if the wait ran out)."""
    console.print(task_table(task))
    if not task["terminal"]:
        console.print(f"still {task['status']} after {waited:g} s: `asya watch {task['id']}` follows it")
    return task_exit(task)


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
        return DONE
    return _ended(gateway.wait(dict(started["task"]), time.monotonic() + args.wait), args.wait)


def new_key() -> str:
    """A fresh idempotency key: each task `asya send` creates is created once, whatever it retries."""
    return str(uuid.uuid4())


def status(args: argparse.Namespace) -> int:
    """The task as the gateway reports it (its whole id in the title); exits as it stands."""
    gateway = stack_option.gateway(args)
    task = known_task(gateway, gateway.task_id(args.id))
    _show(task, args.output)
    return task_exit(task)


def watch(args: argparse.Namespace) -> int:
    """A bar for the task's progress, its FLY messages above it, then the task as it ended, in the
    table `asya status` prints (read again when it ended: its failed branches with it); with `--output
    json`, no bar, only that task as JSON."""
    gateway = stack_option.gateway(args)
    task_id = known_task(gateway, gateway.task_id(args.id))["id"]
    if args.output == JSON:
        for _ in gateway.follow(task_id):  # until it ends, quietly: stdout holds only the answer
            pass
    else:
        _follow(gateway, task_id)
    task = known_task(gateway, task_id)
    _show(task, args.output)
    return task_exit(task)


def _follow(gateway: GatewayClient, task_id: str) -> None:
    """The task's progress bar and FLY lines, until it ends."""
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TextColumn("{task.fields[at]}"))
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(short_id(task_id), total=100, at="connecting")
        for kind, data in gateway.follow(task_id):
            if kind == FLY:
                progress.console.print(_fly_line(data))
                continue
            at = str(data.get("status")) + (
                f" at {data['actor']}" if data.get("actor") and not data.get("terminal") else ""
            )
            progress.update(bar, completed=float(data.get("progress") or 0), at=at)


def known_task(gateway: GatewayClient, task_id: str) -> dict[str, Any]:
    """The task the gateway knows by this whole id; an unknown one is a mistake (exit 2), as an unknown
    short id is."""
    task = gateway.task(task_id)
    if task is None:
        raise TaskCommandError(f"no task {task_id}")
    return task


def _show(task: dict[str, Any], output: str) -> None:
    if output == JSON:
        print_json(task)
    else:
        console.print(task_table(task))


def _fly_line(event: Any) -> Text:
    """`actor: data` for a FLY event (`{"actor": ..., "data": ...}`); text data is printed as is."""
    data = event.get("data") if isinstance(event, dict) else event
    line = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    actor = event.get("actor") if isinstance(event, dict) else None
    return Text.assemble((f"{actor}: ", "cyan"), line) if actor else Text(line)


def cancel(args: argparse.Namespace) -> int:
    """Cancel a task that has not ended; one that has is left as it is, and said so (the gateway's
    cancel would answer with it unchanged, as a cancel is idempotent there)."""
    gateway = stack_option.gateway(args)
    task_id = gateway.task_id(args.id)
    idle = _nothing_to(known_task(gateway, task_id), task_id, "cancel")
    if idle:
        console.print(f"[red]{idle}[/red]", highlight=False)
        return NOT_DONE
    canceled = gateway.cancel(task_id)
    console.print(task_table(canceled))
    if canceled.get("status") != TaskStatus.CANCELED:
        console.print(f"[red]task {short_id(task_id)} ended ({canceled.get('status')}) before it was canceled[/red]")
        return NOT_DONE
    return DONE


def resume(args: argparse.Namespace) -> int:
    """Resume a paused task; any other is said not to be paused, without asking the gateway (which would
    refuse it with 409)."""
    gateway = stack_option.gateway(args)
    task_id = gateway.task_id(args.id)
    idle = _nothing_to(known_task(gateway, task_id), task_id, "resume")
    if idle:
        console.print(f"[red]{idle}[/red]", highlight=False)
        return NOT_DONE
    console.print(task_table(gateway.resume(task_id, args.input)))
    return DONE


def _nothing_to(task: dict[str, Any], task_id: str, action: str) -> str | None:
    """Why `action` (cancel, resume) has nothing to do for the task, in a person's words; None if it has."""
    state = task.get("status")
    if task.get("terminal"):
        return f"task {short_id(task_id)} already ended ({state}); nothing to {action}"
    if action == "resume" and state != TaskStatus.PAUSED:
        return f"task {short_id(task_id)} is {state}, not paused; nothing to resume"
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
    for name, summary, example, answer in (
        ("status", f"a task as the gateway reports it; {EXITS_AS_IT_STANDS}", "asya status 5f0c9a2e", TASK_JSON),
        ("watch", f"follow a task live until it ends; {EXITS_AS_IT_STANDS}", "asya watch 5f0c9a2e", TASK_JSON),
        (
            "results",
            "what x-sink and x-sump kept for an envelope and its branches, summed up",
            "asya results 5f0c9a2e",
            "[each document kept, as the crew wrote it, with its key]",
        ),
        ("cancel", "cancel a task and its fan-out branches", "asya cancel 5f0c9a2e", None),
    ):
        by_id = command(commands, name, summary, example)
        by_id.add_argument(
            "id",
            type=some_id,
            help="the task's id, or its first characters (a recent task's short id, as tables show it)",
        )
        add_stack_options(by_id)
        if answer:
            add_output_option(by_id, answer)
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
    for deployable in (send_command, resuming, again):
        add_stack_options(deployable)


COMMANDS = {
    "send": send,
    "status": status,
    "watch": watch,
    "results": results_cli.results,
    "cancel": cancel,
    "resume": resume,
    "rerun": rerun,
}
