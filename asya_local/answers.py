"""What an `asya` command answers besides the text a person reads: its exit status, by one table for
every command (docs/local-stack.md, "Exit status"), and with `--output json` its answer as JSON on
stdout, nothing else there (a refusal goes to stderr, `asya_local.screen`).

The exit status of a command about one task says how that task stands, whichever command showed it
(`status`, `watch`, `send --wait`, `rerun --wait`): a script checks a task the same way with each."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

DONE = 0  # the answer given, the action done; the task succeeded
NOT_DONE = 1  # the task failed or was canceled; or the action was not done (already ended, the gateway refused)
MISTAKE = 2  # a usage mistake, an unknown id, a mesh file refused, no stack running
STILL_RUNNING = 3  # the task has not ended: a wait ran out, or `status` of a task still under way

TABLE, JSON = "table", "json"


def task_exit(task: dict[str, Any]) -> int:
    """The exit status for a task as the gateway reports it (`terminal`, `status`)."""
    if not task.get("terminal"):
        return STILL_RUNNING
    return DONE if task.get("status") == "succeeded" else NOT_DONE


def add_output_option(parser: argparse.ArgumentParser, what: str) -> None:
    """`--output table|json`: `what` the JSON is (the table is for people, and may change)."""
    parser.add_argument(
        "--output",
        choices=(TABLE, JSON),
        default=TABLE,
        help=f"table (for people, the default) or json: {what}, alone on stdout",
    )


def print_json(value: Any) -> None:
    """`value` as indented JSON on stdout: the whole answer of a command run with `--output json`."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n")
