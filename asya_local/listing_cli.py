"""`asya tasks` and `asya queues`: what the mesh holds, listed. Tasks newest first through the gateway,
page by page, each by its short id with why it ended badly; queue depths read from SQS."""

from __future__ import annotations

import argparse
import shlex
import time
from typing import Any

from rich.live import Live
from rich.table import Table

from asya.names import CONTAINER_SERVICES_OUTPUT
from asya.task_record import TaskStatus
from asya_local import stack_option
from asya_local.answers import DONE, JSON, add_output_option, print_json
from asya_local.arguments import command, moment_argument, page_size
from asya_local.container_counts import TaskCount, service_places, task_counts
from asya_local.local_state import running_state
from asya_local.moments import SHAPES, in_order
from asya_local.queues import queue_depths
from asya_local.roles import local_client
from asya_local.running_mesh import TaskCommandError, known_actor, known_flow, running_mesh
from asya_local.screen import console
from asya_local.stack_option import add_stack_options
from asya_local.task_text import tasks_table

ALL_STATUSES = "all"  # `asya tasks --status`: every status, newest first across them (the default)
LISTING_FILTERS = ("status", "flow", "actor", "since", "until")


def tasks(args: argparse.Namespace) -> int:
    """Tasks newest first, of every status unless one is asked for, fan-out branches left out: one page
    (from `--cursor` if given), or every page with `--all`; when more are left, the command that shows
    the next page (with `--output json`, the cursor: `{"tasks": [...], "next_cursor": ...}`)."""
    try:
        in_order(args.since, args.until)
    except ValueError as exc:
        raise TaskCommandError(str(exc)) from None
    if not args.stack and (args.flow or args.actor):  # a name the mesh file lacks would list nothing
        mesh = running_mesh()
        if args.flow:
            known_flow(mesh, args.flow)
        if args.actor:
            known_actor(mesh, args.actor)
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
    if args.output == JSON:
        print_json({"tasks": found, "next_cursor": cursor})
        return DONE
    shown = "tasks" if args.status == ALL_STATUSES else f"{args.status} tasks"
    console.print(tasks_table(found, f"{shown}: {len(found)}, newest first"))
    if cursor:
        console.print(f"more tasks: {shlex.join(next_page(where, args.limit, cursor))}", soft_wrap=True, markup=False)
    return DONE


def next_page(where: dict[str, str | None], limit: int, cursor: str) -> list[str]:
    """The `asya tasks` command line of the page after this one: the same filters (times as the
    moments they were resolved to, so that `1h` does not move), and the cursor, joined to its option:
    a cursor may begin with `-`, which on its own would read as an option."""
    given = [item for name, value in where.items() if value for item in (f"--{name}", value)]
    return ["asya", "tasks", *given, "--limit", str(limit), f"--cursor={cursor}"]


def queues(args: argparse.Namespace) -> int:
    """Queue depths, read from SQS with the local administrator's credentials, or with `--stack` the
    caller's (`sqs:ListQueues`, `sqs:GetQueueAttributes`); a container actor's row also says how many
    tasks run (`ecs:DescribeServices`, asked only of a mesh with container actors)."""
    if args.stack:
        mesh = stack_option.deployed(args)
        sqs, namespace, places = mesh.client("sqs"), mesh.namespace, service_places(mesh.outputs)
        ecs = mesh.client("ecs") if places else None
    else:
        state = running_state()
        sqs, namespace = local_client("sqs", state["endpoint"]), state["namespace"]
        places = service_places({CONTAINER_SERVICES_OUTPUT: state.get("container_services", "")})
        ecs = local_client("ecs", state["endpoint"]) if places else None

    def table() -> Table:
        counts = task_counts(ecs, places) if ecs is not None else None
        return queue_table(queue_depths(sqs, namespace), counts and {places[a].service: c for a, c in counts.items()})

    if not args.watch:
        console.print(table())
        return DONE
    with Live(table(), console=console, refresh_per_second=2) as live:
        try:
            while True:
                time.sleep(0.5)
                live.update(table())
        except KeyboardInterrupt:
            return DONE


def queue_table(depths: dict[str, tuple[int, int, int]], tasks: dict[str, TaskCount] | None = None) -> Table:
    """The queues by name; with `tasks` (the container actors' counts, by queue name: a container
    actor's service is named as its queue) a `tasks` column, empty in a Lambda actor's row."""
    table = Table(title="queues", title_justify="left")
    columns = ("queue", "visible", "in flight", "delayed", *(("tasks",) if tasks is not None else ()))
    for column in columns:
        table.add_column(column, justify="left" if column in ("queue", "tasks") else "right")
    for name, (visible, in_flight, delayed) in sorted(depths.items()):
        count = tasks.get(name) if tasks is not None else None
        figures = (str(visible), str(in_flight), str(delayed))
        table.add_row(name, *figures, *((count.text() if count else "",) if tasks is not None else ()))
    return table


def add_parsers(commands: Any) -> None:
    listing = command(
        commands,
        "tasks",
        "tasks newest first, of every status unless one is asked for; fan-out branches left out",
        "asya tasks --status failed --flow triage-reviews --since 1h",
        "asya tasks --actor score --since '2026-11-26 09:00' --until '2026-11-26 10:00' --all",
        "asya tasks --status failed --output json",
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
    add_output_option(listing, '{"tasks": [each task as `asya status` gives it], "next_cursor": ...}')
    queue_command = command(commands, "queues", "the mesh's queue depths", "asya queues --watch")
    queue_command.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    for listed in (listing, queue_command):
        add_stack_options(listed)


COMMANDS = {"tasks": tasks, "queues": queues}
