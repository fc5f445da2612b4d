"""`asya results`: what x-sink and x-sump kept for an envelope and its branches, read from the local
stack's bucket and tasks table, or with `--stack` a deployed mesh's with the caller's credentials: each
summed up (`asya_local.results_text`), or as kept with `--output json` (the table `asya demo` prints
of them is `asya_local.demo_report`'s). Exit 0 when something was kept, 1 when nothing was for a task
the gateway knows, 2 for an id it does not (`asya_local.answers`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import orjson

from asya.results import result_prefix
from asya_local import stack_option
from asya_local.answers import DONE, JSON, NOT_DONE, print_json
from asya_local.local_state import gateway_of, running_state
from asya_local.results import UNPARSED, KeptResults
from asya_local.results_text import kept_table, shown_once, task_row
from asya_local.roles import local_client
from asya_local.running_mesh import TaskCommandError
from asya_local.screen import console


def results(args: argparse.Namespace) -> int:
    """What was kept for an envelope and its branches; the id whole, or the first characters of an
    envelope that left a result or of a recent task (`GatewayClient.task_id`); with `--stack`, of a
    recent task (`deployed_results`)."""
    if args.stack:
        return deployed_results(args)
    state = running_state()
    s3, dynamodb = local_client("s3", state["endpoint"]), local_client("dynamodb", state["endpoint"])
    kept = KeptResults(s3, state["bucket"], state["namespace"], dynamodb, state.get("tasks_table")).all()
    gateway = gateway_of(state) if "gateway_url" in state else None
    named = {str(doc["envelope"].get("id")) for doc in kept if str(doc["envelope"].get("id")).startswith(args.id)}
    if len(named) == 1:  # a short id, as the tables show, of an envelope that left a result
        args.id = named.pop()
    elif not named and gateway is not None:  # a task that left none: which one, and why
        args.id = gateway.task_id(args.id)
    own_prefix = result_prefix(state["namespace"], args.id)
    own = [doc for doc in kept if doc["key"].startswith(own_prefix) or doc["envelope"].get("id") == args.id]
    children = [doc for doc in kept if doc["envelope"].get("parent_id") == args.id]
    if not own and not children:
        return _nothing_kept(args.id, gateway.task(args.id) if gateway is not None else None)
    return _show([*own, *children], args.output)


def deployed_results(args: argparse.Namespace) -> int:
    """`asya results --stack`: the task the gateway knows by the id given, and its branches (those its
    record lists), each one's results read with the caller's credentials where the crew kept them: its
    S3 prefix and its task record. A deployed mesh's tables are not scanned, so an envelope that is no
    task (one put on a queue by hand) needs its whole id."""
    mesh = stack_option.deployed(args)
    task_id = mesh.gateway.task_id(args.id)
    task = mesh.gateway.task(task_id)
    kept = KeptResults(mesh.s3, mesh.bucket, mesh.namespace, mesh.client("dynamodb"), mesh.outputs.get("TasksTable"))
    found = [doc for envelope_id in [task_id, *(task or {}).get("branch_ids", [])] for doc in kept.of(envelope_id)]
    if not found:
        return _nothing_kept(task_id, task)
    return _show(found, args.output)


def _show(docs: list[dict[str, Any]], output: str) -> int:
    """Each document summed up (each failure once, a fan-out root's task's ending on its own envelope's
    block), or with `--output json` all of them as kept, in one JSON list."""
    if output == JSON:
        print_json([{"key": doc["key"], **doc["envelope"]} for doc in docs])
        return DONE
    shown = shown_once(docs)
    for doc in shown:
        if UNPARSED in doc["envelope"]:  # a body x-sump kept as it came: shown as it is
            print_result(doc)
        else:
            console.print(kept_table(doc, Path.cwd(), task_row(doc, shown)))
    return DONE


def _nothing_kept(given: str, task: dict[str, Any] | None) -> int:
    """Say why there is nothing to show: an unknown id (a mistake, exit 2), a task that ended and will
    keep nothing more, or a running one that may."""
    if task is None:
        raise TaskCommandError(f"no results for {given}, and no task has that id")
    if task.get("terminal"):
        console.print(f"no results for task {given} (it is {task.get('status')})")
    else:
        console.print(f"no results yet for task {given} (it is {task.get('status')})")
    return NOT_DONE


def print_result(doc: dict[str, Any]) -> None:
    try:
        console.print_json(orjson.dumps({"key": doc["key"], **doc["envelope"]}).decode())
    except orjson.JSONEncodeError:  # nested deeper than the printer goes (x-sump keeps such bodies)
        console.print(f"{doc['key']}: {doc['text']}", markup=False, highlight=False)
