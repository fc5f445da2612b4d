"""Why a task did not succeed, said the way a person looks for it: where (the actor), what (the
handler's exception type, or the reason when there is none) and its message, then its traceback.

A task's own error says it for a task that failed at one of its hops. A fan-out root its branches
failed (`BranchFailed`) has only a count for an error, and its own envelope may have ended well at
another actor: the cause is its first failing branch's, which the gateway's view of the task names
(`failed_branches`). A task whose join gave up (`JoinFailed`) failed at the join, because of a branch
that failed before it: its lead is that branch's error, at the join. The task lists read the same, so
a list row and the page agree on where a task failed and why.

The gateway lists tasks without `failed_branches` (a read of their branches each): `Explainer` reads
the view of each such ended task once, and keeps it (an ended task's failure does not change)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from asya_local.console.wording import flattened
from asya_local.gateway_client import GatewayError, GatewayUnreachableError

BRANCH_FAILED = "BranchFailed"  # the gateway's reason for a root its branches failed (asya_gateway.views)
JOIN_FAILED = "JoinFailed"  # a join gave up on its branches (asya.reasons)
BY_BRANCHES = (BRANCH_FAILED, JOIN_FAILED)
ENDED_BADLY = ("failed", "canceled")
SHORT = 90  # characters of the reason a task list's row shows


@dataclass(frozen=True, slots=True)
class Why:
    """Why a task ended as it did: `ended` ("failed", "canceled") `at` an actor, with an error `kind`
    and `message`; `branch`: the failed branch it comes from (its id, and its place in the fan when a
    join names it), None for the task's own; `summary`: the task's own error when the lead is a
    branch's (the count of branches, or what the join said)."""

    ended: str
    at: str | None
    kind: str | None
    message: str
    traceback: str | None = None
    branch: dict[str, Any] | None = None
    summary: str | None = None

    def cause(self) -> str:
        """`ValueError: review 2 of lamp-2 has no text to score`, or one of them."""
        return ": ".join(part for part in (self.kind, self.message) if part)

    def short(self, most: int = SHORT) -> str:
        """The cause cut to `most` characters, for a list's row (the page has it whole)."""
        return flattened(self.cause(), most)


def why(task: dict[str, Any]) -> Why | None:
    """Why the task failed or was canceled, or None for a task that did not (or says nothing of it)."""
    status = str(task.get("status") or "")
    if status not in ENDED_BADLY:
        return None
    error = _mapping(task.get("error"))
    reason = task.get("reason")
    lead = _lead_branch(task)
    if lead is not None and reason in BY_BRANCHES:
        branch_error = _mapping(lead.get("error"))
        return Why(
            ended=status,
            at=task.get("actor") if reason == JOIN_FAILED else lead.get("actor"),
            kind=branch_error.get("type") or lead.get("reason"),
            message=str(branch_error.get("message") or ""),
            traceback=branch_error.get("traceback"),
            branch=lead,
            summary=_summary(reason, task.get("actor"), error.get("message")),
        )
    if not error and not reason:
        return None
    return Why(
        ended=status,
        at=task.get("actor") or (task.get("route") or {}).get("curr") or None,
        kind=error.get("type") or (reason if str(reason).lower() != status else None),  # not "canceled: Canceled"
        message=str(error.get("message") or ""),
        traceback=error.get("traceback"),
    )


def _summary(reason: str, actor: Any, message: Any) -> str | None:
    """The task's own error beside its branch's: what the join said as it gave up, or the count."""
    if not message:
        return None
    return f"the join at {actor} gave up: {message}" if reason == JOIN_FAILED else f"the task: {message}"


def _lead_branch(task: dict[str, Any]) -> dict[str, Any] | None:
    """The branch whose failure leads: the first that failed, else the first that ended otherwise."""
    branches = _failed_branches(task)
    failed = [branch for branch in branches if branch.get("status") == "failed"]
    first = failed or branches
    return first[0] if first else None


def _mapping(value: Any) -> dict[str, Any]:
    """An error as a view gives it, or none: `error` is null on some."""
    return value if isinstance(value, dict) else {}


def needs_branches(task: dict[str, Any]) -> bool:
    """Whether a listed task's cause is in branches its list row does not carry."""
    return (
        task.get("status") in ENDED_BADLY
        and task.get("reason") in BY_BRANCHES
        and bool(task.get("terminal"))
        and "failed_branches" not in task
    )


class Explainer:
    """Listed tasks with what their page says of their failure (`failed_branches`), for those whose
    cause is in their branches: each such task's view is read once and kept (the newest `most`)."""

    def __init__(self, read: Callable[[str], dict[str, Any] | None], most: int = 500) -> None:
        self._read = read
        self._most = most
        self._kept: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()  # every open page's live list asks

    def explained(self, tasks: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self._explained(task) if needs_branches(task) else task for task in tasks]

    def _explained(self, task: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            kept = self._kept.get(str(task["id"]))
        if kept is None:
            try:
                kept = self._read(str(task["id"])) or task
            except (GatewayError, GatewayUnreachableError):  # the row says what it has; read again next time
                return task
            with self._lock:
                self._kept[str(task["id"])] = kept
                while len(self._kept) > self._most:
                    self._kept.popitem(last=False)
        return {**task, "failed_branches": kept.get("failed_branches") or []}


def other_failures(task: dict[str, Any], cause: Why, listed: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The failed branches the page has not shown yet: not the one the cause comes from, nor those its
    list of branches has (each with its error there), so that no branch is listed twice."""
    shown = {branch.get("id") for branch in listed} | ({cause.branch.get("id")} if cause.branch else set())
    return [branch for branch in _failed_branches(task) if branch.get("id") not in shown]


def _failed_branches(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The branches the gateway names as failed. A join's branches count the root's own envelope among
    them (a join of the root's fan goes on under the root's id): when it failed, the gateway names the
    task itself, at the actor it failed at with its handler's error, and the page shows it as the
    task's own envelope (`_task_why.html`)."""
    named = task.get("failed_branches") or []
    return [branch for branch in named if isinstance(branch, dict)]
