"""The ECS agent's scale-in protection endpoint for the local stack's container tasks.

On ECS every container of a task gets `ECS_AGENT_URI`; a `PUT` of `<uri>/task-protection/v1/state`
sets the task's scale-in protection (the agent calls ECS's `UpdateTaskProtection` with the task
role's session) and a `GET` reads it. Locally each consumer worker is a task: the stack registers it
here and gives it an `ECS_AGENT_URI` of this endpoint, which checks a request as the agent and ECS
do (a JSON object of `ProtectionEnabled`, required, and `ExpiresInMinutes`, 1 to 2880; nothing else),
asks whether the task role may (`ecs:UpdateTaskProtection` / `ecs:GetTaskProtection` on the task's
ARN, by the local endpoint's IAM evaluation), and answers in the agent's shapes: `protection`,
or `error` with its status. The local scaler reads the protection before it stops a worker, as ECS
does before a scale-in (`asya_local.container_scaling`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from asya.consumer.protection import MAX_MINUTES, STATE_PATH
from asya_local.functions.lambda_shapes import ACCOUNT, REGION
from asya_local.json_answer import send_json

DEFAULT_MINUTES = 120  # ECS's protection when a request names no expiry
FIELDS = frozenset({"ProtectionEnabled", "ExpiresInMinutes"})  # the agent refuses any other
Permits = Callable[[str, str, str], bool]  # (role ARN, action, resource ARN): whether the role's policies allow it


@dataclass
class LocalTask:
    arn: str
    role: str
    until: float | None = None  # epoch seconds when its protection lapses; None: not protected

    def protected_at(self, now: float) -> bool:
        return self.until is not None and self.until > now


class TaskAgent:
    """`register(family, role)` a task (a worker about to start) for its `ECS_AGENT_URI`;
    `protected(task_id)` is what a scale-in asks. `clusters` gives each family its service's cluster."""

    def __init__(self, clusters: dict[str, str], permits: Permits, clock: Callable[[], float] = time.time) -> None:
        self._clusters = clusters
        self._permits = permits
        self._clock = clock
        self._tasks: dict[str, LocalTask] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="asya-task-agent", daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def register(self, family: str, role: str) -> tuple[str, str]:
        """A new task of `family`: its id and its `ECS_AGENT_URI` (`/api/<id>`, as the agent's)."""
        task_id = uuid.uuid4().hex
        cluster = self._clusters.get(family, family)
        with self._lock:
            self._tasks[task_id] = LocalTask(f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/{cluster}/{task_id}", role)
        return task_id, f"{self.url}/api/{task_id}"

    def forget(self, task_id: str) -> None:
        with self._lock:
            self._tasks.pop(task_id, None)

    def protected(self, task_id: str) -> bool:
        with self._lock:
            task = self._tasks.get(task_id)
            return task is not None and task.protected_at(self._clock())

    def protected_tasks(self) -> list[str]:
        """The ARNs of the tasks protected now."""
        now = self._clock()
        with self._lock:
            return [task.arn for task in self._tasks.values() if task.protected_at(now)]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, task_id: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        """The agent's answer (status, body) to `method` on the state of task `task_id`."""
        with self._lock:
            task = self._tasks.get(task_id)
        if task is None:
            return 404, _error("", "ResourceNotFoundException", "Failed to find a task for the request")
        if method == "GET":
            return self._checked(task, "ecs:GetTaskProtection") or (200, self._protection(task))
        try:
            request = json.loads(raw or b"null")
        except ValueError:
            request = None
        if not _well_formed(request):
            return 400, _error("", "InvalidParameterException", "UpdateTaskProtection: failed to decode request")
        if "ProtectionEnabled" not in request:
            message = "Invalid request: does not contain 'ProtectionEnabled' field"
            return 400, _error(task.arn, "InvalidParameterException", message)
        denied = self._checked(task, "ecs:UpdateTaskProtection")
        if denied is not None:
            return denied
        minutes = request.get("ExpiresInMinutes", DEFAULT_MINUTES)
        if not 1 <= minutes <= MAX_MINUTES:
            message = f"expiresInMinutes must be between 1 and {MAX_MINUTES} minutes, got {minutes}"
            return 400, _error(task.arn, "InvalidParameterException", message)
        with self._lock:
            task.until = self._clock() + minutes * 60 if request["ProtectionEnabled"] else None
        return 200, self._protection(task)

    def _checked(self, task: LocalTask, action: str) -> tuple[int, dict[str, Any]] | None:
        """ECS's AccessDeniedException (HTTP 400), passed on by the agent, if the task role may not."""
        if self._permits(task.role, action, task.arn):
            return None
        message = f"User: {task.role} is not authorized to perform: {action} on resource: {task.arn}"
        return 400, _error(task.arn, "AccessDeniedException", message)

    def _protection(self, task: LocalTask) -> dict[str, Any]:
        live = task.protected_at(self._clock())
        expires = datetime.fromtimestamp(task.until, UTC).isoformat() if live and task.until else None
        return {"protection": {"ExpirationDate": expires, "ProtectionEnabled": live, "TaskArn": task.arn}}


def _well_formed(request: Any) -> bool:
    """As the agent decodes a request: an object of known fields, a boolean and a whole number."""
    if not isinstance(request, dict) or not set(request) <= FIELDS:
        return False
    enabled, minutes = request.get("ProtectionEnabled", False), request.get("ExpiresInMinutes", 1)
    return isinstance(enabled, bool) and isinstance(minutes, int) and not isinstance(minutes, bool)


def _error(arn: str, code: str, message: str) -> dict[str, Any]:
    return {"error": {**({"Arn": arn} if arn else {}), "Code": code, "Message": message}}


def _handler(agent: TaskAgent) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._serve("GET")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def _serve(self, method: str) -> None:
            parts = self.path.split("?", 1)[0].removeprefix("/api/").split("/", 1)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if len(parts) != 2 or "/" + parts[1] != STATE_PATH:
                status, body = 404, _error("", "ResourceNotFoundException", f"no such path {self.path}")
            else:
                status, body = agent.answer(method, parts[0], raw)
            send_json(self, status, body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a worker's protection shows in its own lines."""

    return Handler
