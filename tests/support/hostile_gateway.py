"""A corpus of hostile requests for every route and method the status gateway serves.

Each case is an HTTP request as a client sends it and the answer it must get: a 4xx naming what is
wrong (or a correct 2xx/404), never a 5xx. `{task}` in a path stands for a task that exists (created
and cancelled before the corpus runs), so a case can reach past the 404 of an unknown id. The unit
tests send the corpus through the Lambda function; the integration tests send it over real HTTP.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from tests.support import hostile

API = "/api/v1/mesh"
TASK = "{task}"
JSON_HEADERS = (("Content-Type", "application/json"),)
FLOW = "echo"  # the flow the gateway under test serves: actor `a`, payload an object
FLOW_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}
# A value of each JSON type but the one a field wants; null is left out where a field is optional.
NOT_A_NUMBER: dict[str, Any] = {"bool": True, "string": "5", "timestamp": "2026-01-01T00:00:00Z", "array": [5]}
NOT_A_STRING: dict[str, Any] = {"int": 7, "float": 1.5, "bool": True, "array": ["a"], "object": {"k": "v"}}


@dataclass(frozen=True, slots=True)
class Request:
    name: str
    method: str
    target: str  # path and query, as on the request line
    status: int  # the answer it must get
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = JSON_HEADERS
    names: str = ""  # what the answer's message must mention (the field, the parameter)
    extra: dict[str, Any] = field(default_factory=dict)

    def path_for(self, task_id: str) -> str:
        return self.target.replace(TASK, task_id)


def _json(document: Any) -> bytes:
    return orjson.dumps(document)


def _create(name: str, status: int, names: str = "", **fields: Any) -> Request:
    body = {"route": ["a"], "payload": {"n": 1}} | fields
    return Request(f"create: {name}", "POST", API, status, _json(body), names=names)


def _creates() -> Iterator[Request]:
    yield _create("a good one", 201)
    for kind, value in NOT_A_NUMBER.items():
        yield _create(f"timeout as a {kind}", 422, "timeout", timeout=value)
    for kind, value in NOT_A_STRING.items():
        yield _create(f"flow as a {kind}", 422, "flow", flow=value, route=None)
    for kind, value in {"string": "a", "object": {"a": 1}, "bool": True, "number": 1}.items():
        yield _create(f"route as a {kind}", 422, "route", route=value)
    yield _create("route naming a number", 422, "route.0", route=[1])
    yield _create("route naming null", 422, "route.0", route=[None])
    yield _create("route naming a crew actor", 400, "route[0]", route=["x-sink"])
    yield _create("route naming a crew actor after an actor", 400, "route[1]: 'x-resume'", route=["a", "x-resume"])
    yield _create(
        "route naming a name of the mesh's own", 400, "route[1]: 'x-spark-guard'", route=["a", "x-spark-guard"]
    )
    yield _create("route naming a path", 400, "route[0]", route=["../a"])
    yield _create("route of 101 actors", 422, "route", route=["a"] * 101)
    yield _create("an empty route", 400, "route", route=[])
    for kind, value in {"array": [], "string": "h", "number": 1, "bool": False}.items():
        yield _create(f"headers as a {kind}", 422, "headers", headers=value)
    yield _create("a header the mesh sets", 400, "x-asya-", headers={"x-asya-origin": "me"})
    yield _create("timeout zero", 422, "timeout", timeout=0)
    yield _create("timeout negative", 422, "timeout", timeout=-1)
    yield _create("timeout past 30 days", 422, "timeout", timeout=1e12)
    yield _create("an unknown field", 422, "priority", priority=1)
    yield _create("both flow and route", 400, "flow", flow=FLOW)
    yield _create("an unknown flow", 400, "unknown flow", flow="nope", route=None)
    yield _create(
        "a payload the flow refuses",
        400,
        f"the input schema of flow {FLOW!r}:",
        flow=FLOW,
        route=None,
        payload={"n": "x"},
    )
    yield _create("a payload over the SQS limit", 413, "limit", payload="x" * hostile.SQS_LIMIT)
    deep_payload = b'{"route": ["a"], "payload": ' + hostile.nested(300).encode() + b"}"  # read, but never written
    yield Request("create: a payload nested 300 deep", "POST", API, 400, deep_payload, names="nest deeper than 64")
    at_the_bound = b'{"route": ["a"], "payload": ' + hostile.nested(63).encode() + b"}"  # 64 with the body's object
    yield Request("create: a body nested 64 deep", "POST", API, 201, at_the_bound)
    yield _create("no actor of that name", 400, "ghost", route=["ghost"])
    yield _create("no actor of that name after an actor", 400, "no actor 'ghost'", route=["a", "ghost"])
    yield Request("create: no payload", "POST", API, 422, _json({"route": ["a"]}), names="payload")
    yield Request("create: neither flow nor route", "POST", API, 400, _json({"payload": {}}), names="flow")
    good = _json({"route": ["a"], "payload": {}})
    for name, wait in {"of 0": "0", "negative": "-1", "past API Gateway's bound": "26", "not a number": "soon"}.items():
        yield Request(f"create: a wait {name}", "POST", f"{API}?wait={wait}", 422, good, names="wait")
    stealthy = _json({"route": ["a"], "payload": {}, "headers": {"x-asya-mesh-status": "off"}})
    yield Request("create: a wait for a task without status", "POST", f"{API}?wait=1", 400, stealthy, names="wait")
    for kind, value in hostile.WRONG_TYPES.items():
        if kind != "object":
            yield Request(f"create: body is a {kind}", "POST", API, 422, _json(value), names="body")
    yield Request("create: empty body", "POST", API, 422, b"", names="body")
    yield Request("create: invalid JSON", "POST", API, 422, b'{"route": ["a"], "payload": ', names="JSON")
    yield Request("create: trailing garbage", "POST", API, 422, b'{"payload": 1} x', names="JSON")
    yield Request("create: NaN", "POST", API, 422, b'{"route": ["a"], "payload": NaN}', names="JSON")
    yield Request("create: a number past a double", "POST", API, 422, b'{"route":["a"],"payload":1e400}', names="JSON")
    yield Request("create: a lone surrogate", "POST", API, 422, rb'{"route":["a"],"payload":"\ud800"}', names="JSON")
    deep = b'{"route": ["a"], "payload": ' + hostile.nested(100_000).encode() + b"}"
    yield Request("create: 100,000 levels deep", "POST", API, 400, deep, names="nest deeper")
    yield Request(
        "create: a flow in invalid UTF-8", "POST", API, 400, b'{"flow": "\xff\xfe", "payload": {}}', names="flow"
    )
    yield Request("create: a payload in invalid UTF-8", "POST", API, 201, b'{"route": ["a"], "payload": "\xc3("}')
    good = _json({"route": ["a"], "payload": {"n": 1}})
    for media_type in ("text/plain", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded"):
        headers = (("Content-Type", media_type),)
        yield Request(f"create: sent as {media_type}", "POST", API, 415, good, headers, names="content-type")
    yield Request(
        "create: sent as application/json+charset",
        "POST",
        API,
        201,
        good,
        (("Content-Type", "application/json; charset=utf-8"),),
    )


def _lists() -> Iterator[Request]:
    yield Request("list: all", "GET", API, 200)
    yield Request("list: an unknown status", "GET", f"{API}?status=bogus", 400, names="status")
    yield Request("list: a status too long", "GET", f"{API}?status={'s' * 100}", 422, names="status")
    for limit in ("0", "-1", "101", "99999999999999999999", "abc", "1.5", "", "true"):
        yield Request(f"list: limit {limit!r}", "GET", f"{API}?limit={limit}", 422, names="limit")
    yield Request("list: limit 100", "GET", f"{API}?limit=100", 200)
    garbage = base64.urlsafe_b64encode(b"\x00\xffnot json").decode()
    not_keys = base64.urlsafe_b64encode(_json({"status": None, "key": {"id": {"N": "1"}}})).decode()
    a_set = base64.urlsafe_b64encode(_json({"status": None, "key": {"id": {"SS": ["a"]}}})).decode()
    empty = base64.urlsafe_b64encode(_json({"status": None, "key": {"id": {"S": ""}}})).decode()
    running = base64.urlsafe_b64encode(_json({"status": "running", "key": {"id": {"S": "t"}}})).decode()
    for name, cursor in {
        "garbage": "%%%garbage",
        "base64 of garbage": garbage,
        "a number key": not_keys,
        "a set key": a_set,
        "an empty key": empty,
        "of another listing": running,
        "base64 of a list": base64.urlsafe_b64encode(b"[1,2]").decode(),
    }.items():
        yield Request(f"list: a cursor {name}", "GET", f"{API}?cursor={cursor}", 400, names="cursor")
    yield Request("list: a cursor too long", "GET", f"{API}?cursor={'A' * 4097}", 422, names="cursor")


def _ids() -> Iterator[tuple[str, str, int]]:
    """(name, id as it goes on the path, the answer of a read): ids no task has, or that cannot be ids."""
    yield "unknown", "no-such-task", 404
    yield "unicode", "%D0%B7%D0%B0%D0%B4%D0%B0%D1%87%D0%B0-%F0%9F%92%A5", 404
    yield "control characters", "a%00b%0A%1B", 404
    yield "a path upwards", "..%2F..%2Fhealth", 404
    yield "an encoded slash", "a%2Fb", 404
    yield "another namespace's task", "asya-other-00000000-0000-0000-0000-000000000000", 404
    yield "very long", "t" * 300, 422
    yield "a quote", "%22%27%3C%3E", 404


def _by_id() -> Iterator[Request]:
    yield Request("get: an empty id (the list)", "GET", f"{API}/", 200)
    for name, task_id, status in _ids():
        yield Request(f"get: id {name}", "GET", f"{API}/{task_id}", status, names="task_id" if status == 422 else "")
        yield Request(f"cancel: id {name}", "DELETE", f"{API}/{task_id}", status)
        yield Request(f"cancel A2A: id {name}", "POST", f"/a2a/tasks/{task_id}:cancel", status)
        yield Request(f"resume: id {name}", "POST", f"{API}/{task_id}/resume", status, _json({"input": {}}))
        yield Request(f"follow: id {name}", "GET", f"{API}/{task_id}/events", status)
        running = _json({"type": "status", "status": "running"})
        yield Request(f"report: id {name}", "POST", f"{API}/{task_id}/events", status, running)
    yield Request("get: a task", "GET", f"{API}/{TASK}", 200)
    yield Request("get: a task that ended, with a wait", "GET", f"{API}/{TASK}?wait=25", 200, names="canceled")
    yield Request("get: a wait past API Gateway's bound", "GET", f"{API}/{TASK}?wait=25.5", 422, names="wait")
    yield Request("cancel: a cancelled task again", "DELETE", f"{API}/{TASK}", 200)
    yield Request("follow: a cancelled task", "GET", f"{API}/{TASK}/events", 200)
    yield Request(
        "resume: a task not paused", "POST", f"{API}/{TASK}/resume", 409, _json({"input": {}}), names="not paused"
    )
    for kind, value in [*NOT_A_STRING.items(), ("string", "yes"), ("null", None)]:
        if not isinstance(value, dict):
            body = _json({"input": value})
            yield Request(f"resume: input as a {kind}", "POST", f"{API}/{TASK}/resume", 422, body, names="input")
    yield Request(
        "resume: an unknown field", "POST", f"{API}/{TASK}/resume", 422, _json({"inputs": {}}), names="inputs"
    )


def _follows() -> Iterator[Request]:
    for name, cursor in {
        "garbage": "garbage",
        "negative": "-1",
        "too long": "9" * 100,
        "a timestamp": "2026-01-01T00:00:00Z",
        "unicode": "%E2%91%A0",
    }.items():
        yield Request(f"follow: cursor {name}", "GET", f"{API}/{TASK}/events?cursor={cursor}", 422, names="cursor")
        headers = (("Last-Event-ID", cursor),)
        yield Request(
            f"follow: Last-Event-ID {name}", "GET", f"{API}/{TASK}/events", 422, None, headers, "last-event-id"
        )


def _reports() -> Iterator[Request]:
    target = f"{API}/{TASK}/events"

    def report(name: str, answer: int, names: str = "", **fields: Any) -> Request:
        body = _json({"type": "status", "status": "running"} | fields)
        return Request(f"report: {name}", "POST", target, answer, body, names=names)

    for kind, value in NOT_A_NUMBER.items():
        yield report(f"progress as a {kind}", 422, "progress", progress=value)
    yield report("progress over 100", 422, "progress", progress=101)
    yield report("progress negative", 422, "progress", progress=-1)
    for kind, value in NOT_A_STRING.items():
        yield report(f"actor as a {kind}", 422, "actor", actor=value)
    yield report("an unknown status", 422, "status", status="done")
    yield report("an unknown field", 422, "colour", colour="red")
    yield report("an error that is a string", 422, "error", error="boom")
    yield report("an error with a numeric message", 422, "error.message", error={"message": 5})
    yield report("a running status with progress", 202, progress=50.0)
    yield Request("report: no type", "POST", target, 422, _json({"status": "running"}), names="type")
    yield Request("report: an unknown type", "POST", target, 422, _json({"type": "party"}), names="type")
    yield Request("report: a body that is a list", "POST", target, 422, _json([1]), names="body")
    yield Request("report: invalid JSON", "POST", target, 422, b"{", names="JSON")
    fly_deep = b'{"type": "fly", "data": ' + hostile.nested(600).encode() + b"}"
    yield Request("report: fly data nested 600 deep", "POST", target, 400, fly_deep, names="nest deeper")
    fly_big = _json({"type": "fly", "data": "x" * 300_000})
    yield Request("report: fly data over its limit", "POST", target, 413, fly_big, names="limit")
    yield Request("report: fly data of any JSON", "POST", target, 202, _json({"type": "fly", "data": [None, 1.5]}))


def _mcp(name: str, status: int, body: Any, names: str = "") -> Request:
    raw = body if isinstance(body, bytes) else _json(body)
    return Request(f"mcp: {name}", "POST", "/mcp", status, raw, names=names)


def _mcps() -> Iterator[Request]:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    yield _mcp("ping", 200, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    yield _mcp("a notification", 202, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield _mcp("invalid JSON", 400, b'{"jsonrpc": ', names="-32700")
    yield _mcp("invalid UTF-8", 400, b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"', names="-32700")
    yield _mcp("empty body", 400, b"", names="-32600")
    yield _mcp("an empty batch", 400, [], names="batches")
    yield _mcp("a batch", 400, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}] * 2, names="batches")
    yield _mcp("no method", 400, {"jsonrpc": "2.0", "id": 1}, names="-32600")
    yield _mcp("a method that is a number", 400, {"jsonrpc": "2.0", "id": 1, "method": 5}, names="-32600")
    yield _mcp("no jsonrpc version", 400, {"id": 1, "method": "ping"}, names="-32600")
    yield _mcp("params as a list", 400, {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, names="-32600")
    yield _mcp("an id that is an object", 400, {"jsonrpc": "2.0", "id": {}, "method": "ping"}, names="-32600")
    yield _mcp("a body that is a string", 400, "ping", names="-32600")
    yield _mcp("an unknown method", 200, {"jsonrpc": "2.0", "id": 1, "method": "tools/burn"}, names="-32601")
    yield _mcp("a tool name that is a number", 200, call | {"params": {"name": 5}}, names="-32602")
    yield _mcp("an unknown tool", 200, call | {"params": {"name": "nope"}}, names="unknown tool")
    yield _mcp(
        "arguments that are a string", 200, call | {"params": {"name": FLOW, "arguments": "x"}}, names="input schema"
    )
    deep = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": ' + hostile.nested(100_000).encode() + b"}}"
    yield _mcp("100,000 levels deep", 400, deep, names="nest deeper")
    yield Request("mcp: a GET", "GET", "/mcp", 405, names="POST")


def _others() -> Iterator[Request]:
    yield Request("health", "GET", "/health", 200)
    yield Request("health with a body and a query", "GET", "/health?x=%00", 200, b"\xff")
    yield Request("openapi", "GET", "/api/v1/openapi.json", 200)
    yield Request("an unknown route", "GET", "/api/v2/mesh", 404)
    yield Request("a method no route has", "PUT", API, 404, _json({}))
    yield Request("a method no route has, on a task", "PATCH", f"{API}/{TASK}", 404, _json({}))


SUMP = "/api/v1/sump"


def _sumps() -> Iterator[Request]:
    yield Request("sump: list", "GET", SUMP, 200)
    yield Request(
        "sump: list by reason, actor and time", "GET", f"{SUMP}?reason=Timeout&actor=a&since=2026-01-01T00:00:00Z", 200
    )
    for since in ("yesterday", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00"):
        yield Request(f"sump: since {since!r}", "GET", f"{SUMP}?since={since}", 400, names="since")
    for limit in ("0", "101", "x"):
        yield Request(f"sump: limit {limit!r}", "GET", f"{SUMP}?limit={limit}", 422, names="limit")
    tasks_cursor = base64.urlsafe_b64encode(_json({"status": None, "key": {"id": {"S": "t"}}})).decode()
    text_count = base64.urlsafe_b64encode(
        _json({"status": "sump", "key": {"id": {"S": "t"}, "redrives": {"S": "1"}}})
    ).decode()
    for name, cursor in {"of the tasks' listing": tasks_cursor, "with a text count": text_count}.items():
        yield Request(f"sump: a cursor {name}", "GET", f"{SUMP}?cursor={cursor}", 400, names="cursor")
    yield Request("sump: show one never kept", "GET", f"{SUMP}/no-such-id", 404, names="no-such-id")
    redrive = f"{SUMP}/no-such-id:redrive"
    yield Request("sump: redrive one never kept", "POST", redrive, 404, _json({}), names="no-such-id")
    yield Request("sump: redrive with an unknown field", "POST", redrive, 422, _json({"force": True}), names="force")
    yield Request("sump: redrive to a number", "POST", redrive, 422, _json({"to": 5}), names="to")
    yield Request(
        "sump: redrive an envelope that is a list", "POST", redrive, 422, _json({"envelope": []}), names="envelope"
    )
    yield Request("sump: redrive with no body", "POST", redrive, 422, names="body")


CORPUS: tuple[Request, ...] = (
    *_creates(),
    *_lists(),
    *_by_id(),
    *_follows(),
    *_reports(),
    *_sumps(),
    *_mcps(),
    *_others(),
)
assert len({case.name for case in CORPUS}) == len(CORPUS), "case names are test ids"
