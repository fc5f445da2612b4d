"""What a task's answer carries beyond its record: the branches that failed it and why, its output
(read from the results bucket, or a link to it when the answer cannot hold it) and its input (read
from the claim checks). Shared by every door's answers (`asya_gateway.service`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asya.claims import Claims, claim_prefix
from asya.join_failure import FAILED_BRANCHES
from asya.reasons import Reason
from asya.results import result_prefix
from asya.task_record import TaskStatus
from asya.task_store import TaskStore
from asya_gateway.kept import IN_REST, Carried, KeptObjects
from asya_gateway.settings import GatewaySettings
from asya_gateway.task_input import INPUT, INPUT_REF
from asya_gateway.views import BRANCH_FAILED, task_view

FAILED_BRANCHES_SHOWN = 10
FAILING = (TaskStatus.FAILED, TaskStatus.CANCELED)


@dataclass(frozen=True)
class TaskAnswers:
    """`kept`: the results bucket's objects; `claimed`: the claim checks' (a task's input)."""

    settings: GatewaySettings
    tasks: TaskStore
    kept: KeptObjects
    claimed: KeptObjects
    claims: Claims | None

    def explained(self, view: dict[str, Any]) -> dict[str, Any]:
        """A task failed by its branches, with the branches that failed and why (the first
        `FAILED_BRANCHES_SHOWN` of them), read in one read of up to 50 records: for a fan-out root,
        those its record names; for a task whose join gave up (`JoinFailed`), those its error names
        (the join's branches are not registered on the root), each with its place in the fan."""
        if view.get("reason") == BRANCH_FAILED and view.get("branch_ids"):
            return {**view, "failed_branches": self._failed_branches(view["branch_ids"])}
        error = view.get("error")
        if view.get("reason") != Reason.JOIN_FAILED or not isinstance(error, dict):
            return view
        named = error.get(FAILED_BRANCHES)
        places = {
            branch["id"]: branch
            for branch in (named if isinstance(named, list) else [])
            if isinstance(branch, dict) and isinstance(branch.get("id"), str)
        }
        if not places:
            return view
        own = places.pop(view["id"], None)  # the joined envelope's own branch: its record is the join's
        shown = [
            {**branch, "branch": places[branch["id"]].get("branch"), "width": places[branch["id"]].get("width")}
            for branch in self._failed_branches(list(places))
        ]
        if own is not None:
            shown.append(_own_branch(own))
        shown.sort(key=lambda branch: branch["branch"] if isinstance(branch["branch"], int) else 0)
        told = {name: value for name, value in error.items() if name != FAILED_BRANCHES}  # listed apart
        return {**view, "error": told, "failed_branches": shown}

    def _failed_branches(self, branch_ids: list[str]) -> list[dict[str, Any]]:
        """Of these branches, those that did not succeed, each as its own view says it: id, status, the
        actor it ended at, reason and error (its handler's own type, its traceback folded)."""
        records = self.tasks.get_many(branch_ids)
        failed = [task_view(record) for _, record in sorted(records.items()) if record.get("status") in FAILING]
        return [
            {name: branch[name] for name in ("id", "status", "actor", "reason", "error") if name in branch}
            for branch in failed[:FAILED_BRANCHES_SHOWN]
        ]

    def with_output(self, view: dict[str, Any], carried: Carried) -> dict[str, Any]:
        """The view with the result's payload as `output` when x-sink kept the result in S3 under this
        task's own key (a `result` reported from outside the mesh is any text, and is not followed), or
        `output_url` when the answer could not carry it."""
        bucket = self.settings.results_bucket
        link = view.get("result")
        own = f"s3://{bucket}/{result_prefix(self.settings.namespace, view['id'])}"
        if "output" in view or bucket is None or not isinstance(link, str) or not _own_key(link, own):
            return view
        if view["status"] == TaskStatus.FAILED:  # what x-sink kept is the error payload, said by `error`
            return view
        kept = self.kept.answer(link.removeprefix(f"s3://{bucket}/"), carried, part="payload")
        if kept is None:
            return view
        if kept.link is not None:
            return {**view, "output_url": kept.link}
        document = kept.document
        if isinstance(document, dict) and "payload" in document:
            return {**view, "output": document["payload"]}
        return view

    def with_input(self, view: dict[str, Any], carried: Carried = IN_REST) -> dict[str, Any]:
        """The view with the task's input as `input` when it is kept in S3 (`input_ref`), or `input_url`
        when the answer could not carry it; an object not there (expired) leaves the reference. Only a
        task's own view reads it: a wait's answer carries the output, and the two together could pass
        what Lambda may answer."""
        reference = view.get(INPUT_REF)
        bucket = self.claimed.bucket
        uri = reference.get("uri") if isinstance(reference, dict) else None
        own = f"s3://{bucket}/{claim_prefix(self.settings.namespace)}"
        if self.claims is None or not isinstance(uri, str) or not _own_key(uri, own):
            return view
        kept = self.claimed.answer(uri.removeprefix(f"s3://{bucket}/"), carried)
        if kept is None:
            return view
        shown = {name: value for name, value in view.items() if name != INPUT_REF}
        return {**shown, "input_url": kept.link} if kept.link is not None else {**shown, INPUT: kept.document}


def _own_branch(named: dict[str, Any]) -> dict[str, Any]:
    """The joined envelope's own branch, failed, as the join's error names it: its record is the
    join's, so its actor and error are the ones the join kept (`asya.join_failure.failed_branch`)."""
    error = {"type": named.get("type"), "message": named.get("message")}
    shown = {"id": named["id"], "status": TaskStatus.FAILED.value, "actor": named.get("actor"), "error": error}
    return {**shown, "branch": named.get("branch"), "width": named.get("width")}


def _own_key(link: str, own: str) -> bool:
    """Whether a link names an object under `own`: a `..` is refused, as a client following the link's
    URL would read it as a step out of the prefix (a presigned link is followed by HTTP clients)."""
    return link.startswith(own) and ".." not in link
