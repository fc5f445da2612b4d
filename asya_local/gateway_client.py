"""The status gateway's API as `asya` calls it: create a task, read, cancel or follow one, list tasks
page by page, list the flows (MCP `tools/list`), list, show and redrive what x-sump kept.

Every request carries the gateway's credential: an API key (`x-api-key`, the local stack's and
`gateway.auth: api_key`'s), or a SigV4 signature from the caller's AWS credentials (`IamAuth`, for
`gateway.auth: iam`, the default on AWS).

Following reconnects the way an `EventSource` does: with `Last-Event-ID` set to the last event's id,
after the `retry:` delay the server asked for. The local server keeps one stream open until the task
ends; on AWS each response is a bounded batch, so the same loop turns into long polling there.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import httpx2
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from asya.live import FLY, STATUS
from asya.names import ACTOR_NAME
from asya.task_record import TERMINAL
from asya.variables import WAIT_MAX_SECONDS

API = "/api/v1"
WHOLE_ID_LENGTH = 36  # a task id is a UUID
SHORT_ID_SEARCHED = 100  # the first messages x-sump lists, a short id of one is looked for among
SHORT_ID_CANDIDATES = 10  # the tasks a short id that names several lists
FLOW_NAME = re.compile(ACTOR_NAME)
RECONNECT_SECONDS = 0.5  # until the server sends `retry:`
IDEMPOTENCY_HEADER = "Idempotency-Key"
CREATE_RETRY_SECONDS = (0.5, 2.0)  # pauses after a create whose answer was lost, before it is sent again
RETRIED_STATUSES = (502, 503, 504)  # answers that do not say whether the task was made
READ_TIMEOUT_SECONDS = 60.0  # the server sends a keep-alive comment every 15 s


class GatewayError(RuntimeError):
    """The gateway answered, but not with what was asked for (the message says why; `status`: the
    answer's status code, when it is known)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ShortIdError(LookupError):
    """A short id that names no task, or more than one (`candidates`, the first of them)."""

    def __init__(self, message: str, candidates: list[str] | None = None) -> None:
        super().__init__(message)
        self.candidates = candidates or []


class GatewayUnreachableError(RuntimeError):
    """Nothing answers at the gateway's URL."""


class IamAuth(httpx2.Auth):
    """Signs each request with SigV4 for API Gateway's IAM authorization (service `execute-api`).

    The signature covers the method, path, query, host, content type and body; other headers are left
    unsigned, as a proxy may rewrite them. Credentials are frozen per request, so temporary ones
    (a role, SSO) are refreshed by botocore as they expire."""

    requires_request_body = True
    SIGNED_HEADERS = ("content-type",)

    def __init__(self, credentials: Credentials, region: str) -> None:
        self.credentials = credentials
        self.region = region

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        headers = {name: request.headers[name] for name in self.SIGNED_HEADERS if name in request.headers}
        signed = AWSRequest(method=request.method, url=str(request.url), data=request.content, headers=headers)
        SigV4Auth(self.credentials.get_frozen_credentials(), "execute-api", self.region).add_auth(signed)
        for name, value in signed.headers.items():
            if name.lower() not in self.SIGNED_HEADERS:  # Authorization, X-Amz-Date, X-Amz-Security-Token
                request.headers[name] = value
        yield request


class BearerAuth(httpx2.Auth):
    """`Authorization: Bearer <token>` for a gateway with sign-in (`gateway.auth: jwt`): `token()` is
    asked for each request, so a source that mints (the local issuer) never sends an expired one."""

    def __init__(self, token: Callable[[], str]) -> None:
        self.token = token

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        yield request


class GatewayClient:
    """`api_key` for a key-protected gateway, or `auth` for an IAM-protected one (`IamAuth`) or one
    with sign-in (`BearerAuth`)."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        transport: httpx2.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        auth: httpx2.Auth | None = None,
    ) -> None:
        self.url = url
        self.sleep = sleep
        self.http = httpx2.Client(
            base_url=url,
            headers={"x-api-key": api_key} if api_key is not None else {},
            auth=auth,
            timeout=30.0,
            transport=transport,
            trust_env=False,
        )

    def health(self) -> dict[str, Any]:
        """`GET /health`: `{"status": "ok", "namespace": ...}`; a first call that proves URL and credential."""
        return self._json("GET", "/health", 200)

    def flows(self) -> list[dict[str, Any]]:
        """MCP `tools/list`, the flows' tools only: `name` and `inputSchema` (with its `examples`). A flow
        is named like an actor; the gateway's own tools (`sump_list`, ...) never are."""
        answer = self._json("POST", "/mcp", 200, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        if "error" in answer:
            raise GatewayError(f"tools/list: {answer['error'].get('message')}")
        return [tool for tool in answer["result"]["tools"] if FLOW_NAME.match(str(tool.get("name", "")))]

    def listed_flows(self) -> dict[str, dict[str, Any]]:
        """`GET /flows`: each flow as the gateway has it: its `route` (a program flow's, the shortest way
        through its program) and, for a program flow, its `program` (compiled, to draw)."""
        flows: dict[str, dict[str, Any]] = self._json("GET", f"{API}/flows", 200)["flows"]
        return flows

    def task_page(
        self,
        *,
        status: str | None = None,
        flow: str | None = None,
        actor: str | None = None,
        since: str | None = None,
        until: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
        roots: bool = True,
    ) -> dict[str, Any]:
        """`GET /mesh`: one page of tasks, newest first (`tasks`), and where the next one starts
        (`next_cursor`, None at the end). Each filter given narrows it: a status (None or `all`: every
        status), a flow, an actor the task reached, started from `since` to `until` (RFC 3339); fan-out
        branches are left out unless `roots` is false."""
        params: dict[str, Any] = {"limit": limit, "roots": "true" if roots else "false"}
        given = (("status", status), ("flow", flow), ("actor", actor), ("since", since), ("until", until))
        params |= {name: value for name, value in (*given, ("cursor", cursor)) if value}
        page = self._json("GET", f"{API}/mesh", 200, params=params)
        return {"tasks": list(page["tasks"]), "next_cursor": page.get("next_cursor")}

    def tasks(self, **where: Any) -> list[dict[str, Any]]:
        """The first page's tasks only (`task_page`'s filters)."""
        return list(self.task_page(**where)["tasks"])

    def starting_with(self, given: str, limit: int = SHORT_ID_CANDIDATES) -> dict[str, Any]:
        """`GET /mesh?id_prefix=`: the tasks the caller may see whose id starts with `given`, whatever its
        case and however old (`tasks`, the one whose whole id it is first), and whether more do (`more`).
        `ShortIdError` with the gateway's reason if it refuses the prefix (too short)."""
        response = self._call("GET", f"{API}/mesh", params={"id_prefix": given, "limit": limit})
        if response.status_code == 400:
            raise ShortIdError(str(response.json().get("message", "")).removeprefix("id_prefix: "))
        if response.status_code != 200:
            raise GatewayError(_message(response), response.status_code)
        return dict(response.json())

    def task_id(self, given: str) -> str:
        """The whole id of the task `given` names: itself when whole, else the one task the gateway finds
        whose id starts with it (`starting_with`), as the short ids every table shows, in any case
        (`ShortIdError` if none or several do). A whole id in capitals (copied from a page that shows
        it so) is looked for the same way; one the gateway does not find is taken as typed, and the
        gateway says whether a task has it."""
        whole = len(given) >= WHOLE_ID_LENGTH
        if whole and given == given.lower():
            return given
        found = self.starting_with(given)
        ids = [task["id"] for task in found["tasks"]]
        if whole and given.lower() not in {found.lower() for found in ids}:
            return given
        return unique_prefix(given, ids, "task", more=bool(found.get("more")))

    def sump_id(self, given: str) -> str:
        """The whole id of the envelope `given` names among what x-sump kept, by the rule of `task_id`:
        among the first `SHORT_ID_SEARCHED` arrivals x-sump lists, whatever its case."""
        if len(given) >= WHOLE_ID_LENGTH:
            return given
        first = self._json("GET", f"{API}/sump", 200, params={"limit": SHORT_ID_SEARCHED})["entries"]
        among = "among what x-sump kept"
        if len(first) == SHORT_ID_SEARCHED:
            among = f"among the first {SHORT_ID_SEARCHED} messages x-sump lists"
        return unique_prefix(given, [entry["id"] for entry in first], "message", among=among)

    def resume(self, task_id: str, given: dict[str, Any]) -> dict[str, Any]:
        """`POST /mesh/{id}/resume`: a paused task goes on with the human's input merged into its payload."""
        return self._json("POST", f"{API}/mesh/{task_id}/resume", 200, json={"input": given})

    def follow_ticket(self, task_id: str) -> dict[str, Any]:
        """`POST /mesh/{id}/ticket`: a ticket that lets a browser follow the task for a few minutes without
        a credential (`ticket`, `expires_at`, `follow_url`: the stream to open with it)."""
        return self._json("POST", f"{API}/mesh/{task_id}/ticket", 200)

    def cancel(self, task_id: str) -> dict[str, Any]:
        """`DELETE /mesh/{id}`: cancel the task and its fan-out branches (idempotent)."""
        return self._json("DELETE", f"{API}/mesh/{task_id}", 200)

    def create_task(self, body: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
        """`POST /mesh`: the answer (`id`, `status_url`, `events_url`, the task). With `idempotency_key`,
        a create whose answer did not come (the gateway unreachable, a 5xx) is sent again with the key,
        and answers with the task the first one made (`replayed`), never a second task."""
        return self._create(body, idempotency_key, (200, 201))

    def run_task(
        self,
        body: dict[str, Any],
        seconds: float,
        clock: Callable[[], float] = time.monotonic,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """`POST /mesh?wait=`, then `GET /mesh/{id}?wait=` while the task runs and `seconds` allow (the
        gateway waits at most `WAIT_MAX_SECONDS` per request): the task as it ended, with its `output`,
        or as it was when the wait ran out (`terminal` false). `idempotency_key` as for `create_task`."""
        deadline = clock() + seconds
        created = self._create(body, idempotency_key, (200, 202), params={"wait": _bounded(seconds)})
        return self.wait(dict(created["task"]), deadline, clock)

    def wait(
        self, task: dict[str, Any], deadline: float, clock: Callable[[], float] = time.monotonic
    ) -> dict[str, Any]:
        """`GET /mesh/{id}?wait=` while `task` runs and the `deadline` (on `clock`) allows: the task as
        it ended, or as it was when the wait ran out."""
        while not task["terminal"] and (left := deadline - clock()) > 0:
            task = self._json("GET", f"{API}/mesh/{task['id']}", 200, params={"wait": _bounded(left)})
        return task

    def rerun(
        self, task_id: str, payload: Any = None, *, given: bool = False, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """`POST /mesh/{id}/rerun`: a new task of the ended task's flow (or route), with the input it was
        started with, or `payload` when `given`; the answer as a create's (`id`, `task`, ...). With
        `idempotency_key`, sent again after a lost answer as a create is, and never a second task."""
        body = {"payload": payload} if given else {}
        return self._create(body, idempotency_key, (200, 201), path=f"{API}/mesh/{task_id}/rerun")

    def sump(self, **filters: str) -> Iterator[dict[str, Any]]:
        """`GET /sump`, every page: what x-sump kept that passes `filters` (reason, actor, since)."""
        params = {name: value for name, value in filters.items() if value}
        while True:
            page = self._json("GET", f"{API}/sump", 200, params=params)
            yield from page["entries"]
            if not page.get("next_cursor"):
                return
            params["cursor"] = page["next_cursor"]

    def sump_entry(self, envelope_id: str) -> dict[str, Any]:
        """`GET /sump/{id}`: the last arrival of the envelope in x-sump and the copy kept."""
        return self._json("GET", f"{API}/sump/{envelope_id}", 200)

    def redrive(self, envelope_id: str, body: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """`POST /sump/{id}:redrive`: (whether this call redrove it, what was done)."""
        response = self._call("POST", f"{API}/sump/{envelope_id}:redrive", json=body)
        if response.status_code not in (200, 202):
            raise GatewayError(_message(response), response.status_code)
        return response.status_code == 202, dict(response.json())

    def task(self, task_id: str) -> dict[str, Any] | None:
        """`GET /mesh/{id}`: the task, or None if the gateway does not know it."""
        response = self._call("GET", f"{API}/mesh/{task_id}")
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise GatewayError(_message(response))
        return dict(response.json())

    def follow(self, task_id: str) -> Iterator[tuple[str, Any]]:
        """`(kind, data)` for each `status` and `fly` event of the task, across reconnections, until a
        terminal status (the last one yielded). `GatewayError` if the task is unknown."""
        last_event_id: str | None = None
        delay = RECONNECT_SECONDS  # the server's `retry:` replaces it for later reconnections
        while True:
            headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
            timeout = httpx2.Timeout(10.0, read=READ_TIMEOUT_SECONDS)
            try:
                with self.http.stream(
                    "GET", f"{API}/mesh/{task_id}/events", headers=headers, timeout=timeout
                ) as response:
                    if response.status_code != 200:
                        response.read()
                        raise GatewayError(_message(response))
                    for event in httpx2.EventSource(response):
                        last_event_id = event.id or last_event_id
                        delay = event.retry / 1000 if event.retry is not None else delay
                        if event.event not in (STATUS, FLY):
                            continue
                        data: Any = event.json()
                        yield event.event, data
                        if event.event == STATUS and data.get("status") in TERMINAL:
                            return
            except httpx2.ConnectError as exc:
                raise GatewayUnreachableError(f"nothing answers at {self.url}: {exc}") from None
            except (httpx2.ReadTimeout, httpx2.ReadError, httpx2.RemoteProtocolError):
                pass  # the stream broke off: continue from the last event, as an EventSource would
            self.sleep(delay)

    def _create(
        self, body: dict[str, Any], key: str | None, expected: tuple[int, ...], path: str = f"{API}/mesh", **kwargs: Any
    ) -> dict[str, Any]:
        """`POST /mesh` (or `path`, another create), tried again after a lost answer when a key makes that
        safe."""
        headers = {IDEMPOTENCY_HEADER: key} if key is not None else {}
        for pause in CREATE_RETRY_SECONDS if key is not None else ():
            try:
                response = self._call("POST", path, json=body, headers=headers, **kwargs)
            except GatewayUnreachableError:
                self.sleep(pause)
                continue
            if response.status_code not in RETRIED_STATUSES:
                break
            self.sleep(pause)
        else:
            response = self._call("POST", path, json=body, headers=headers, **kwargs)
        if response.status_code not in expected:
            raise GatewayError(_message(response), response.status_code)
        return dict(response.json())

    def _json(self, method: str, path: str, expected: int | tuple[int, ...], **kwargs: Any) -> dict[str, Any]:
        response = self._call(method, path, **kwargs)
        if response.status_code not in (expected if isinstance(expected, tuple) else (expected,)):
            raise GatewayError(_message(response), response.status_code)
        return dict(response.json())

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        try:
            return self.http.request(method, path, **kwargs)
        except httpx2.TransportError as exc:
            raise GatewayUnreachableError(f"nothing answers at {self.url}: {exc}") from None


def unique_prefix(
    given: str,
    ids: list[str],
    what: str,
    *,
    among: str = "",
    more: bool = False,
    unknown: str = "give its whole id",
) -> str:
    """The one id of `ids` that `given` is (an id may be short, as an envelope put on a queue by hand
    can be) or starts (a short id, as the tables show them), whatever its case: people type ids the
    way they read them. `ShortIdError` naming `what`, where it was looked for (`among`) and what to do
    (`unknown`) if none does, or the candidates if several do (`more`: more than `ids` may)."""
    if given in ids:
        return given
    folded = given.lower()
    found = list(dict.fromkeys(found for found in ids if found.lower().startswith(folded)))
    same = [match for match in found if match.lower() == folded]
    if len(same) == 1:
        return same[0]
    if len(found) == 1 and not more:
        return found[0]
    where = f" {among}" if among else ""
    if found:
        listed = ", ".join(found) + (" and more" if more else "")
        raise ShortIdError(f"{given!r} matches {listed}{where}: give more of the id", found)
    if more:
        raise ShortIdError(f"too many {what}s start with {given!r} to look through{where}: give more of the id")
    raise ShortIdError(f"no {what} starts with {given!r}{where}: {unknown}")


def _bounded(seconds: float) -> float:
    """A wait the gateway accepts: more than 0, at most `WAIT_MAX_SECONDS`."""
    return round(min(max(seconds, 0.1), WAIT_MAX_SECONDS), 3)


def _message(response: httpx2.Response) -> str:
    """The gateway's own explanation (`message` of its JSON error body), with the status code."""
    try:
        message = response.json().get("message") or response.text
    except ValueError:
        message = response.text
    return f"{response.status_code}: {message}"
