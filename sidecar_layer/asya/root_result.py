"""What a fan-out root's view says its result is: never one branch's.

A root that fanned out keeps its own envelope's ending in its record (`output`, `result`), and that
envelope is one of the task's branches, no more the task's outcome than any other branch's. So a root
with registered branches has no single result: the view shows its own envelope's ending apart, under
`own_envelope`, beside the branches' counts and ids, and every surface (`asya status`, `asya send
--wait`, the console, MCP) says the task ended in several branches, each with its own result, and
how many of them did not succeed, in the same words (`not_succeeded`).

A join is different: the branches it gathers are not registered on the root, and the joined envelope
goes on under the root's own id, so the root's `output` is the join's result, the task's one result,
and is left where it is. The record is not changed either way: x-sink's result objects, `asya
results` and the benches read it as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OWN_ENVELOPE = "own_envelope"  # the view's field for a fan-out root's own envelope's ending
_ENDING = ("output", "result")


def set_own_envelope_apart(view: dict[str, Any]) -> None:
    """Move a fan-out root's own ending out of the task's result, into `own_envelope`."""
    own = {name: view.pop(name) for name in _ENDING if name in view}
    if own:
        view[OWN_ENVELOPE] = own


def no_single_result(view: dict[str, Any]) -> str | None:
    """For a root that ended in several envelopes, the sentence that says so (None otherwise): what
    the CLI and MCP print where a task's result would be."""
    counts = view.get("branches")
    if not view.get("terminal") or not isinstance(counts, dict):
        return None
    return (
        f"no single result: the task fanned out into {counts.get('total', 0)} branches "
        f"({counts.get('succeeded', 0)} succeeded, {counts.get('failed', 0)} failed, "
        f"{counts.get('canceled', 0)} canceled), each with its own result"
    )


def not_succeeded(counts: Mapping[str, Any]) -> str | None:
    """How many of a fan-out's branches (its own envelope one of them) ended without succeeding, each
    said as it ended, as every surface says it (the gateway's error, the console's and the CLI's
    progress): "2 of 3 branches failed", "8 of 8 branches canceled", "1 failed and 1 canceled of 3
    branches". None when none did."""
    failed, canceled = int(counts.get("failed") or 0), int(counts.get("canceled") or 0)
    total = int(counts.get("total") or failed + canceled)
    if failed and canceled:
        return f"{failed} failed and {canceled} canceled of {total} branches"
    if failed or canceled:
        return f"{failed or canceled} of {total} branches {'failed' if failed else 'canceled'}"
    return None
