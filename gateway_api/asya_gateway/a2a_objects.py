"""A task as A2A objects (docs/a2a.md): its status, its output as an artifact, its updates, in A2A
1.0's shapes (ProtoJSON); and the two versions' answers made of them: 1.0's as made (`Answers`), 0.3's
rewritten (`Answers03`), as the official SDK's own compatibility layer rewrites them. One mapping from
a task's view, two thin renderings: what the endpoint (`asya_gateway.a2a`) and its streams answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asya.envelope import rfc3339, utc_now
from asya.reasons import cause
from asya.root_result import no_single_result
from asya.task_record import TaskStatus

V1, V03 = "1.0", "0.3"
JSON = "application/json"
OUTPUT_ARTIFACT = "output"

# JSON-RPC's own errors, and A2A's (the SDK's `a2a.utils.errors`)
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOTIFICATION_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
EXTENDED_CARD_NOT_CONFIGURED = -32007
VERSION_NOT_SUPPORTED = -32009
# A2A 1.0 names each error's reason in a `google.rpc.ErrorInfo` detail
REASONS = {
    TASK_NOT_FOUND: "TASK_NOT_FOUND",
    TASK_NOT_CANCELABLE: "TASK_NOT_CANCELABLE",
    PUSH_NOTIFICATION_NOT_SUPPORTED: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    UNSUPPORTED_OPERATION: "UNSUPPORTED_OPERATION",
    CONTENT_TYPE_NOT_SUPPORTED: "CONTENT_TYPE_NOT_SUPPORTED",
    EXTENDED_CARD_NOT_CONFIGURED: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    VERSION_NOT_SUPPORTED: "VERSION_NOT_SUPPORTED",
    INVALID_PARAMS: "INVALID_PARAMS",
    INVALID_REQUEST: "INVALID_REQUEST",
    METHOD_NOT_FOUND: "METHOD_NOT_FOUND",
    INTERNAL_ERROR: "INTERNAL_ERROR",
}

# a task's status → A2A's task state (1.0's names; 0.3's are the same words, `Answers03.state`)
STATES = {
    TaskStatus.PENDING: "TASK_STATE_SUBMITTED",
    TaskStatus.RUNNING: "TASK_STATE_WORKING",
    TaskStatus.PAUSED: "TASK_STATE_INPUT_REQUIRED",
    TaskStatus.SUCCEEDED: "TASK_STATE_COMPLETED",
    TaskStatus.FAILED: "TASK_STATE_FAILED",
    TaskStatus.CANCELED: "TASK_STATE_CANCELED",
}
# an A2A task state a listing asks for → the task status it lists (either version's name)
LISTED = {
    **{state: str(status) for status, state in STATES.items()},
    **{state.removeprefix("TASK_STATE_").lower().replace("_", "-"): str(status) for status, state in STATES.items()},
}
# the view's fields a task's metadata carries (`metadata.asya`), for a client that wants more than A2A says
SHOWN = (
    *("status", "flow", "actor", "phase", "progress", "attempt", "reason"),
    *("created_at", "updated_at", "deadline_at", "parent_id", "root_id", "rerun_of"),
)

Urls = Callable[[str], dict[str, str]]


def context_id(view: dict[str, Any]) -> str:
    """A task is its own context; a fan-out branch is in its root's."""
    return str(view.get("root_id") or view["id"])


def a2a_task(view: dict[str, Any], urls: Urls | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {"id": view["id"], "contextId": context_id(view), "status": a2a_status(view)}
    artifact = output_artifact(view)
    if artifact is not None:
        task["artifacts"] = [artifact]
    task["metadata"] = {"asya": _asya(view, urls)}
    return task


def a2a_status(view: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {"state": STATES.get(view["status"], "TASK_STATE_UNSPECIFIED")}
    message = _status_message(view)
    if message is not None:
        status["message"] = message
    moment = view.get("updated_at") or view.get("created_at")
    if moment:
        status["timestamp"] = moment
    return status


def status_update(view: dict[str, Any], urls: Urls | None = None) -> dict[str, Any]:
    return {
        "taskId": view["id"],
        "contextId": context_id(view),
        "status": a2a_status(view),
        "metadata": {"asya": _asya(view, urls)},
    }


def artifact_update(view: dict[str, Any], artifact: dict[str, Any]) -> dict[str, Any]:
    return {"taskId": view["id"], "contextId": context_id(view), "artifact": artifact, "lastChunk": True}


def fly_update(task_id: str, context: str, data: dict[str, Any]) -> dict[str, Any]:
    """A FLY event of the task (or of one of its branches, `envelope`) as a status update of a working
    task, its data as the message's data part."""
    ids = {"taskId": task_id, "contextId": context}
    about = {"event": "fly", "actor": data.get("actor"), "envelope": data.get("id")}
    asya = {key: value for key, value in about.items() if value is not None}
    message = {
        "messageId": f"{task_id}:fly:{utc_now().timestamp():.6f}",
        "role": "ROLE_AGENT",
        **ids,
        "parts": [{"data": data.get("data"), "mediaType": JSON}],
        "metadata": {"asya": asya},
    }
    status = {"state": STATES[TaskStatus.RUNNING], "message": message, "timestamp": rfc3339(utc_now())}
    return {**ids, "status": status, "metadata": {"asya": asya}}


def output_artifact(view: dict[str, Any]) -> dict[str, Any] | None:
    """A task that succeeded: its output as a data part (or a link to it, when the answer could not
    carry it; or, for a fan-out that ended in several envelopes, a sentence that says so)."""
    if view.get("status") != TaskStatus.SUCCEEDED:
        return None
    artifact: dict[str, Any] = {"artifactId": OUTPUT_ARTIFACT, "name": OUTPUT_ARTIFACT}
    if several := no_single_result(view):
        branches = {key: view[key] for key in ("branches", "branch_ids") if key in view}
        return {**artifact, "parts": [{"text": several}, {"data": branches, "mediaType": JSON}]}
    if "output" in view:
        return {**artifact, "parts": [{"data": view["output"], "mediaType": JSON}]}
    if "output_url" in view:
        link = {"url": view["output_url"], "mediaType": JSON, "filename": "output.json"}
        return {**artifact, "description": "The output, larger than an answer carries: a link.", "parts": [link]}
    return None


def _status_message(view: dict[str, Any]) -> dict[str, Any] | None:
    """What the agent says of the task's status: the prompt of a task waiting for input, the error of
    one that failed (or why it was canceled)."""
    status = view["status"]
    if status == TaskStatus.PAUSED:
        pause: dict[str, Any] = view["pause"] if isinstance(view.get("pause"), dict) else {}
        prompt = pause.get("prompt") if isinstance(pause.get("prompt"), str) else "Waiting for input to continue."
        parts = [{"text": prompt}, {"data": pause, "mediaType": JSON}]
    elif status in (TaskStatus.FAILED, TaskStatus.CANCELED):
        error: dict[str, Any] = view["error"] if isinstance(view.get("error"), dict) else {}
        said = [cause(view["reason"], error)] if view.get("reason") else []
        said += [str(error["message"])] if error.get("message") else []
        told = {key: view[key] for key in ("reason", "error", "failed_branches") if view.get(key) is not None}
        parts = [{"text": ": ".join(said) or f"the task {status}"}]
        parts += [{"data": told, "mediaType": JSON}] if told else []
    else:
        return None
    return {
        "messageId": f"{view['id']}:{status}:{view.get('updated_at', '')}",
        "role": "ROLE_AGENT",
        "taskId": view["id"],
        "contextId": context_id(view),
        "parts": parts,
    }


def _asya(view: dict[str, Any], urls: Urls | None) -> dict[str, Any]:
    shown = {key: view[key] for key in SHOWN if view.get(key) is not None}
    return {**shown, **(urls(view["id"]) if urls is not None else {})}


class Answers:
    """A2A 1.0 (ProtoJSON): the objects as made, each answer in its wrapper."""

    version = V1

    def task(self, task: dict[str, Any]) -> dict[str, Any]:
        return task

    def sent(self, task: dict[str, Any]) -> dict[str, Any]:
        return {"task": task}

    def streamed_task(self, task: dict[str, Any]) -> dict[str, Any]:
        return {"task": task}

    def status_update(self, update: dict[str, Any], final: bool) -> dict[str, Any]:  # noqa: ARG002
        return {"statusUpdate": update}  # 1.0 has no `final`: the stream ends after the last

    def artifact_update(self, update: dict[str, Any]) -> dict[str, Any]:
        return {"artifactUpdate": update}

    def listed(self, tasks: list[dict[str, Any]], next_token: str, page_size: int) -> dict[str, Any]:
        # no `totalSize`: the listing reads pages, and never counts the tasks (docs/a2a.md)
        return {"tasks": tasks, "nextPageToken": next_token, "pageSize": page_size}

    def error_data(self, code: int) -> list[dict[str, Any]] | None:
        reason = REASONS.get(code)
        if reason is None:
            return None
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}
        return [{**info, "metadata": {}}]


class Answers03(Answers):
    """A2A 0.3: the same objects rewritten as 0.3 has them (`kind`, lower-case states and roles, parts
    by kind, a data part's data an object), as the SDK's `a2a.compat.v0_3.conversions` does."""

    version = V03

    def task(self, task: dict[str, Any]) -> dict[str, Any]:
        told = {"kind": "task", "id": task["id"], "contextId": task["contextId"], "status": self.status(task["status"])}
        if task.get("artifacts"):
            told["artifacts"] = [self.artifact(artifact) for artifact in task["artifacts"]]
        if task.get("metadata"):
            told["metadata"] = task["metadata"]
        return told

    def sent(self, task: dict[str, Any]) -> dict[str, Any]:
        return self.task(task)

    def streamed_task(self, task: dict[str, Any]) -> dict[str, Any]:
        return self.task(task)

    def status_update(self, update: dict[str, Any], final: bool) -> dict[str, Any]:
        return {"kind": "status-update", **update, "status": self.status(update["status"]), "final": final}

    def artifact_update(self, update: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "artifact-update", **update, "artifact": self.artifact(update["artifact"])}

    def listed(self, tasks: list[dict[str, Any]], next_token: str, page_size: int) -> dict[str, Any]:
        return super().listed([self.task(task) for task in tasks], next_token, page_size)

    def error_data(self, code: int) -> list[dict[str, Any]] | None:  # noqa: ARG002
        return None

    @staticmethod
    def state(state: str) -> str:
        return state.removeprefix("TASK_STATE_").lower().replace("_", "-")

    def status(self, status: dict[str, Any]) -> dict[str, Any]:
        told = {**status, "state": self.state(status["state"])}
        if "message" in status:
            told["message"] = self.message(status["message"])
        return told

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        role = "user" if message.get("role") == "ROLE_USER" else "agent"
        return {"kind": "message", **message, "role": role, "parts": [self.part(part) for part in message["parts"]]}

    def artifact(self, artifact: dict[str, Any]) -> dict[str, Any]:
        return {**artifact, "parts": [self.part(part) for part in artifact["parts"]]}

    @staticmethod
    def part(part: dict[str, Any]) -> dict[str, Any]:
        metadata = dict(part.get("metadata") or {})
        if "text" in part:
            told: dict[str, Any] = {"kind": "text", "text": part["text"]}
        elif "data" in part:
            data = part["data"]
            if not isinstance(data, dict):  # 0.3's data is an object: a value is wrapped, and says so
                data, metadata = {"value": data}, {**metadata, "data_part_compat": True}
            told = {"kind": "data", "data": data}
        else:
            file = {"uri": part.get("url"), "mimeType": part.get("mediaType"), "name": part.get("filename")}
            told = {"kind": "file", "file": {key: value for key, value in file.items() if value is not None}}
        return {**told, "metadata": metadata} if metadata else told
