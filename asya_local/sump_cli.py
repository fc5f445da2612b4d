"""`asya sump`: what x-sump kept, through the gateway (`GET /api/v1/sump`, `POST .../{id}:redrive`).

asya sump list [--reason R] [--actor A] [--since 2h|2026-11-25T10:00:00Z] [--output json]
asya sump show <id> [--output json]
asya sump redrive <id> [--to ACTOR] [--payload JSON|@file] [--envelope @file]
asya sump redrive --reason R [--actor A] [--since T] [--to ACTOR]   every match not redriven yet
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from asya_local.answers import DONE, JSON, NOT_DONE, add_output_option, print_json
from asya_local.arguments import command, json_value, moment_argument, some_id
from asya_local.gateway_client import GatewayClient, GatewayError
from asya_local.moments import SHAPES, local_time
from asya_local.results_text import sump_table
from asya_local.stack_option import add_stack_options
from asya_local.task_text import short_id, shortened

ERROR_SHOWN = 100  # characters of a message's error the list shows, cut between words


class SumpCommandError(ValueError):
    """The command line asks for something that cannot be done; the message says what."""


def add_parser(commands: Any) -> None:
    sump = command(commands, "sump", "what x-sump kept: list, show, redrive", "asya sump list --since 2h")
    actions = sump.add_subparsers(dest="sump_command", required=True, metavar="ACTION")
    listing = command(
        actions, "list", "the messages x-sump kept, newest first", "asya sump list --reason Timeout --actor score"
    )
    show = command(
        actions,
        "show",
        "one message x-sump kept, summed up as `asya results` sums one up",
        "asya sump show 5f0c9a2e",
        "asya sump show 5f0c9a2e --output json",
    )
    show.add_argument("id", type=some_id, help="the envelope's id, or its first characters (as `sump list` shows it)")
    redrive = command(
        actions,
        "redrive",
        "put messages back in the mesh where they failed",
        "asya sump redrive 5f0c9a2e-… --payload @fixed.json",
        "asya sump redrive --reason Timeout --since 1h",
    )
    redrive.add_argument(
        "id", nargs="?", type=some_id, help="the envelope's id or its first characters (or choose them with --reason)"
    )
    redrive.add_argument("--to", help="the actor to send it to instead of where it failed")
    redrive.add_argument("--payload", type=json_value, help="a new payload: JSON, or @file.json")
    redrive.add_argument(
        "--envelope", type=json_value, help="the fixed envelope (@file.json), for a message that never parsed"
    )
    for action in (listing, show, redrive):
        add_stack_options(action)
    for filtered in (listing, redrive):
        filtered.add_argument("--reason", help="only this reason (HandlerError, Timeout, Redriven, ...)")
        filtered.add_argument("--actor", help="only failures at this actor")
        filtered.add_argument("--since", type=moment_argument, help=f"only arrivals since: {SHAPES}")
    add_output_option(listing, '{"entries": [each message as the gateway lists it, its whole id]}')
    add_output_option(show, '{"entry": the message as listed, "kept": the envelope as x-sump kept it}')


def run(args: argparse.Namespace, gateway: GatewayClient, console: Console) -> int:
    if args.sump_command == "list":
        entries = list(gateway.sump(**_filters(args)))
        if args.output == JSON:
            print_json({"entries": entries})
        else:
            console.print(_table(entries))
        return DONE
    if args.sump_command == "show":
        shown = gateway.sump_entry(gateway.sump_id(args.id))
        if args.output == JSON:
            print_json(shown)
        else:
            console.print(sump_table(shown, Path.cwd()))
        return DONE
    return _redrive(args, gateway, console)


def _redrive(args: argparse.Namespace, gateway: GatewayClient, console: Console) -> int:
    if (args.id is None) == (args.reason is None):
        raise SumpCommandError("give an envelope id, or --reason to redrive every match")
    if args.id is None and (args.payload is not None or args.envelope is not None):
        raise SumpCommandError("--payload and --envelope redrive one message: give its id")
    body: dict[str, Any] = {}
    if args.to:
        body["to"] = args.to
    if args.payload is not None:
        body["payload"] = args.payload
    if args.envelope is not None:
        body["envelope"] = args.envelope
    if args.id:
        chosen = [gateway.sump_id(args.id)]
    else:
        chosen = [e["id"] for e in gateway.sump(**_filters(args)) if not e.get("redriven_at")]
    failures = 0
    for envelope_id in chosen:
        try:
            redriven, answer = gateway.redrive(envelope_id, body)
        except GatewayError as exc:
            if args.id:  # the one message asked for: refused as any command's request is (404: exit 2)
                raise
            failures += 1
            console.print(f"[red]{envelope_id}: {exc}[/red]", highlight=False)
            continue
        done = "redriven to" if redriven else "was already redriven to"
        console.print(f"{envelope_id}: {done} {answer['to']} (redrive {answer['redrives']})", highlight=False)
    if not chosen:
        console.print("nothing to redrive")
    return NOT_DONE if failures else DONE


def _filters(args: argparse.Namespace) -> dict[str, str]:
    return {"reason": args.reason or "", "actor": args.actor or "", "since": args.since or ""}


def _table(entries: list[dict[str, Any]]) -> Table:
    """Newest first, each message by its short id (what `show` and `redrive` take), its error cut
    between words (`show` has it whole), times in this machine's zone."""
    table = Table(title=f"x-sump: {len(entries)} kept", title_justify="left")
    for column in ("id", "reason", "actor", "arrived", "error", "redriven"):
        table.add_column(column, overflow="fold", no_wrap=column == "id")
    for entry in sorted(entries, key=lambda found: str(found.get("arrived_at")), reverse=True):
        error = ": ".join(part for part in (entry.get("error_type"), entry.get("message")) if part)
        redriven = entry.get("redriven_at")
        table.add_row(
            short_id(entry["id"]),
            str(entry.get("reason", "")),
            str(entry.get("actor", "")),
            local_time(str(entry.get("arrived_at", ""))),
            shortened(error, ERROR_SHOWN),
            f"to {entry['redriven_to']} at {local_time(str(redriven))}" if redriven else "",
        )
    return table
