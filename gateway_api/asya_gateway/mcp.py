"""Flows as MCP tools over streamable HTTP (`POST /mcp`), stateless, answered as plain JSON.

`initialize`, `ping`, `tools/list` (one tool per flow, its input schema as the tool's, and x-sump's
`sump_list`, `sump_show` and `sump_redrive` when the gateway has the sump table) and
`tools/call` (validate the arguments against the schema, create a task and wait for it up to
`ASYA_MCP_WAIT_SECONDS`: a task that ended answers with its result, or its error as a tool error; one
still running answers with its id and status URL, and says to call `task_result` with that id).
`task_status`, `task_result` (the same wait again) and `task_cancel` follow a task from MCP alone,
the caller's own tasks only, as over REST (`TaskService` as the caller sees it). Tool errors (unknown tool, invalid
arguments) are results with `isError: true`, as the protocol asks, so a model can read and correct
them; malformed JSON-RPC gets a JSON-RPC error.

Messages are parsed and built with the official `mcp-types` models (pydantic only). The SDK's server
is not used: it is an ASGI application that keeps sessions in memory, which a Lambda function behind
API Gateway can neither host nor keep; this endpoint needs no session, so every request stands alone.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import mcp_types as types
import orjson
from pydantic import ValidationError

from asya.reasons import cause
from asya.root_result import OWN_ENVELOPE, no_single_result
from asya.task_record import TaskStatus
from asya_gateway.kept import IN_MCP, LINK_SECONDS
from asya_gateway.service import TaskService
from asya_gateway.sump import UNSET, Sump
from asya_gateway.task_error import TaskError

SERVER = types.Implementation(name="asya-gateway", version="0.1.0")
SUPPORTED = types.version.HANDSHAKE_PROTOCOL_VERSIONS


_ID = {"type": "string", "minLength": 1, "maxLength": 256, "description": "the envelope's (task's) id"}
# x-sump's tools, beside the flows' (a flow is named like an actor, never with `_`)
SUMP_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "sump_list": (
        "List the messages x-sump kept (failures), newest first: id, reason, actor, error, arrival, redrive.",
        {
            "type": "object",
            "properties": {
                "reason": {"type": "string", "maxLength": 80},
                "actor": {"type": "string", "maxLength": 80},
                "since": {"type": "string", "maxLength": 40, "description": "RFC 3339 time"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            "additionalProperties": False,
        },
    ),
    "sump_show": (
        "Show one message x-sump kept, as it was kept (the failure envelope with its error).",
        {"type": "object", "properties": {"id": _ID}, "required": ["id"], "additionalProperties": False},
    ),
    "sump_redrive": (
        "Put a message x-sump kept back in the mesh where it failed (or at actor 'to'), with a fresh attempt "
        "count, optionally with a new payload; its task runs again. Done once per failure.",
        {
            "type": "object",
            "properties": {"id": _ID, "to": {"type": "string", "maxLength": 80}, "payload": {}},
            "required": ["id"],
            "additionalProperties": False,
        },
    ),
}


_BY_ID: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {**_ID, "description": "the task's id, as a flow's tool answered it"}},
    "required": ["id"],
    "additionalProperties": False,
}
# Following a task a flow's tool started, for a task that outlasts the tool call's wait.
TASK_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "task_status": ("A task's status and progress now and, once it ended, its result or error.", _BY_ID),
    "task_result": (
        "Wait for a task to end, then its result or error; a task still running when the wait runs out is "
        "said to be, and this tool is called again.",
        _BY_ID,
    ),
    "task_cancel": ("Cancel a task (and its fan-out branches); answers with the task as it then is.", _BY_ID),
}


class McpEndpoint:
    """`wait_left(seconds)`: how long a tool call may still wait for its task (the request's own time
    left); `idempotency_key`: the HTTP request's `Idempotency-Key`, for the task a tool call creates."""

    def __init__(
        self,
        service: TaskService,
        status_url: Any,
        sump: Sump | None = None,
        *,
        wait_left: Callable[[float], float] = lambda seconds: seconds,
        idempotency_key: str | None = None,
    ) -> None:
        self.service = service
        self.status_url = status_url  # task id → the task's status URL
        self.sump = sump
        self.wait_left = wait_left
        self.idempotency_key = idempotency_key

    def handle(self, body: Any) -> tuple[int, dict[str, Any] | None]:
        """One POSTed JSON-RPC message → (HTTP status, JSON body or None for 202 Accepted)."""
        if isinstance(body, list):
            return 400, _error(None, types.INVALID_REQUEST, "batches are not supported: send one message per request")
        try:
            message = types.jsonrpc_message_adapter.validate_python(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"][1:])) or "message"  # the union member's name is not news
            return 400, _error(
                None,
                types.INVALID_REQUEST,
                f"not a JSON-RPC 2.0 message ({exc.error_count()} problem(s)); {where}: {first['msg']}",
            )
        if not isinstance(message, types.JSONRPCRequest):
            if isinstance(message, types.JSONRPCNotification) and "id" in body:  # a request with a bad id
                return 400, _error(None, types.INVALID_REQUEST, "id: a request's id is a string or a number")
            return 202, None  # notifications and responses need no answer
        params = message.params or {}
        try:
            result = self._dispatch(message.method, params)
        except _RpcError as exc:
            return 200, _error(message.id, exc.code, str(exc))
        return 200, types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )

    @staticmethod
    def parse_error(reason: str) -> dict[str, Any]:
        """The answer to a body that is not JSON at all."""
        return _error(None, types.PARSE_ERROR, f"the body is not JSON: {reason[:200]}")

    def _dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in SUPPORTED else types.version.LATEST_HANDSHAKE_VERSION
            result: Any = types.InitializeResult(
                protocol_version=version,
                capabilities=types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False)),
                server_info=SERVER,
                instructions=(
                    "Each flow's tool runs one flow of this mesh as a task and returns its result; a task that "
                    "takes longer returns its id, and task_result with that id waits for its result."
                ),
            )
        elif method == "ping":
            return {}
        elif method == "tools/list":
            tools = [self._tool(name) for name in sorted(self.service.settings.flows)]
            tools += [
                types.Tool(name=name, description=description, input_schema=schema)
                for name, (description, schema) in TASK_TOOLS.items()
            ]
            if self.sump is not None:
                tools += [
                    types.Tool(name=name, description=description, input_schema=schema)
                    for name, (description, schema) in SUMP_TOOLS.items()
                ]
            result = types.ListToolsResult(tools=tools)
        elif method == "tools/call":
            result = self._call(params)
        else:
            raise _RpcError(types.METHOD_NOT_FOUND, f"method {method!r} is not supported")
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    def _tool(self, name: str) -> types.Tool:
        flow = self.service.settings.flows[name]
        schema = {"type": "object", **flow.input_schema}
        way = "a program whose path depends on the input" if flow.program else " → ".join(flow.route)
        description = flow.description or f"Start flow {name!r} ({way}) as a task."
        return types.Tool(name=name, description=description, input_schema=schema)

    def _call(self, params: dict[str, Any]) -> types.CallToolResult:
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str):
            raise _RpcError(types.INVALID_PARAMS, "tools/call needs a tool 'name'")
        if name in SUMP_TOOLS and self.sump is not None:
            return self._sump_call(self.sump, name, arguments if arguments is not None else {})
        if name in TASK_TOOLS:
            return self._task_call(name, arguments if arguments is not None else {})
        if name not in self.service.settings.flows:
            return _tool_error(f"unknown tool {name!r}; tools/list names the flows of this mesh")
        if arguments is None:
            arguments = {}
        try:
            created = self.service.create(payload=arguments, flow=name, idempotency_key=self.idempotency_key)
        except TaskError as exc:
            return _tool_error(str(exc))
        wait = self.wait_left(self.service.settings.mcp_wait_seconds)
        ended, task = self.service.wait(created.task_id, wait, IN_MCP) if wait and created.tracked else (False, {})
        return self._answer(created.task_id, ended, task, f"Started task {created.task_id} (flow {name})")

    def _task_call(self, name: str, arguments: Any) -> types.CallToolResult:
        """`task_status`, `task_result`, `task_cancel`: the REST API's view, wait and cancel of a task
        the caller sees (another's is unknown, as over REST), answered as a flow's tool call is."""
        try:
            _tool_validator(name)(arguments)
        except ValueError as exc:  # fastjsonschema's JsonSchemaValueException
            return _tool_error(f"invalid arguments for {name}: {exc}")
        task_id = arguments["id"]
        try:
            if name == "task_cancel":
                task = self.service.cancel(task_id)
                now = {"id": task_id, "status_url": self.status_url(task_id), "status": task["status"]}
                text = f"Task {task_id} is {task['status']}."
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=text)], structured_content=now, is_error=False
                )
            wait = self.wait_left(self.service.settings.mcp_wait_seconds) if name == "task_result" else 0
            ended, task = self.service.wait(task_id, wait, IN_MCP)
        except TaskError as exc:
            return _tool_error(str(exc))
        return self._answer(task_id, ended, task, f"Task {task_id}")

    def _answer(self, task_id: str, ended: bool, task: dict[str, Any], subject: str) -> types.CallToolResult:
        """A task as a tool's answer: its result as text once it ended (its error as a tool error), or
        else that it runs, and that `task_result` with its id waits for it, since a host that speaks MCP
        only cannot follow a status URL."""
        url = self.status_url(task_id)
        started = {"id": task_id, "status_url": url}
        if not ended:
            now = {key: task[key] for key in ("status", "progress") if key in task}
            doing = f" ({now['status']}, {now.get('progress', 0)}% done)" if "status" in now else ""
            text = (
                f"{subject}; it is still running{doing}. Call the tool task_result with id {task_id!r} to wait "
                f"for its result (again while it runs). Status: {url}"
            )
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)],
                structured_content={**started, **now},
                is_error=False,
            )
        ended_with = {key: task[key] for key in _ENDED_WITH if key in task}
        failed = task["status"] != TaskStatus.SUCCEEDED
        if failed:
            error = task.get("error") or {}
            why = error.get("message") if isinstance(error, dict) else None
            text = f"Task {task_id} {task['status']}: {cause(task.get('reason'), error) or 'no reason given'}"
            text += f": {why}" if why else ""
        elif several := no_single_result(task):
            text = f"Task {task_id} succeeded with {several}: {url}"
        elif "output_url" in task:
            text = (
                f"Task {task_id} succeeded; its result is larger than an answer may carry. It is at "
                f"{task['output_url']} for {LINK_SECONDS // 60} minutes, and its task at {url}"
            )
        else:
            text = orjson.dumps(task.get("output", task.get("result"))).decode()
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content={**started, **ended_with},
            is_error=failed,
        )

    @staticmethod
    def _sump_call(sump: Sump, name: str, arguments: Any) -> types.CallToolResult:
        """x-sump's tools: the answer is the REST API's, as JSON text and structured content."""
        try:
            _tool_validator(name)(arguments)
        except ValueError as exc:  # fastjsonschema's JsonSchemaValueException
            return _tool_error(f"invalid arguments for {name}: {exc}")
        try:
            if name == "sump_list":
                answer = sump.list(
                    reason=arguments.get("reason"),
                    actor=arguments.get("actor"),
                    since=arguments.get("since"),
                    limit=arguments.get("limit", 20),
                    cursor=None,
                )
            elif name == "sump_show":
                answer = sump.show(arguments["id"], IN_MCP)
            else:
                payload = arguments.get("payload", UNSET)
                redriven, answer = sump.redrive(arguments["id"], to=arguments.get("to"), payload=payload)
                answer = {**answer, "redriven": redriven}
        except TaskError as exc:
            return _tool_error(str(exc))
        text = orjson.dumps(answer).decode()
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=answer, is_error=False
        )


_ENDED_WITH = (
    *("status", "output", "output_url", "result", "reason", "error"),
    *("failed_branches", "branches", "branch_ids", OWN_ENVELOPE),
)


@cache
def _tool_validator(name: str) -> Callable[[Any], Any]:
    """The tool's input schema, compiled at its first call (as the flows' are)."""
    import fastjsonschema

    return fastjsonschema.compile({**SUMP_TOOLS, **TASK_TOOLS}[name][1])


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
