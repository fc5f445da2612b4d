"""Sign-in end to end on the local stack: a mesh with `gateway.auth: jwt` whose issuer the local stack
plays. Tokens from `asya token` and the local issuer are taken by REST, SSE and MCP alike; an expired
one, one for another audience and a forged one are refused with 401s that say why and point at the
protected resource's metadata, which anyone may read and which names the mesh file's issuer."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2
import jwt
import pytest
import yaml

from asya_local import cli
from asya_local.endpoint.process import LocalEndpoint
from asya_local.issuer import LocalIssuer
from asya_local.local_state import write_state
from tests.integration.test_a2a import flown_latencies, state, timed_subscription
from tests.support.stack import RunningMesh, running

pytestmark = pytest.mark.integration
MESH = Path(__file__).resolve().parent / "mesh" / "signin.yaml"
ISSUER = "https://login.example.com/asya"  # as the mesh file says


@pytest.fixture(scope="module")
def signed_in(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, MESH) as mesh:
        yield mesh


@pytest.fixture(scope="module")
def http(signed_in: RunningMesh) -> Iterator[httpx2.Client]:
    assert signed_in.stack.gateway_url is not None
    with httpx2.Client(base_url=signed_in.stack.gateway_url, timeout=30, trust_env=False) as client:
        yield client


def issuer(mesh: RunningMesh) -> LocalIssuer:
    assert mesh.stack.issuer is not None, "a mesh with gateway.auth: jwt gets the local issuer"
    return mesh.stack.issuer


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def asya_token(state_file: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """What `asya token` prints, for the stack the state file names."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASYA_LOCAL_STATE", str(state_file))
        assert cli.main(["token", *args]) == 0
    return capsys.readouterr().out.strip()


def test_a_token_of_asya_token_creates_and_reads_a_task_and_follows_it(
    signed_in: RunningMesh, http: httpx2.Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state_file = tmp_path / "local.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASYA_LOCAL_STATE", str(state_file))
        write_state(signed_in.stack, MESH)
    token = asya_token(state_file, capsys, "--subject", "ana")
    created = http.post("/api/v1/mesh", json={"flow": "pipeline", "payload": {"n": 2}}, headers=bearer(token))
    assert created.status_code == 201, created.text
    task_id = created.json()["id"]
    assert http.get(f"/api/v1/mesh/{task_id}", headers=bearer(token)).status_code == 200
    with http.stream("GET", f"/api/v1/mesh/{task_id}/events", params={"cursor": "0"}, headers=bearer(token)) as sse:
        assert sse.status_code == 200
        statuses: list[Any] = [event.json() for event in httpx2.EventSource(sse) if event.event == "status"]
    assert statuses[-1]["status"] == "succeeded"
    assert statuses[-1]["output"] == {"n": 2, "prepped": True, "label": "even", "done": True}


def test_one_subjects_task_is_a_404_for_another_at_every_door_and_an_admin_sees_it(
    signed_in: RunningMesh, http: httpx2.Client
) -> None:
    """docs/callers.md: a task is its creator's; another subject gets the answer an unknown id gets (so
    ids do not leak), over REST, the locally served stream and A2A alike; the admin scope sees it."""
    ana, bo = (bearer(issuer(signed_in).token(subject=name)) for name in ("ana", "bo"))
    admin = bearer(issuer(signed_in).token(subject="ops", scopes=["asya/admin"]))
    created = http.post("/api/v1/mesh", json={"flow": "pipeline", "payload": {"n": 3}}, headers=ana)
    assert created.status_code == 201, created.text
    task_id = created.json()["id"]
    unknown = http.get("/api/v1/mesh/no-such-task", headers=bo)
    for method, path in (("GET", ""), ("GET", "/events"), ("DELETE", "")):
        answer = http.request(method, f"/api/v1/mesh/{task_id}{path}", headers=bo)
        assert (answer.status_code, answer.json()["message"]) == (404, f"no task {task_id!r}"), (method, path)
    assert unknown.json()["message"] == "no task 'no-such-task'"
    listed = http.get("/api/v1/mesh", params={"flow": "pipeline"}, headers=bo).json()["tasks"]
    assert task_id not in {task["id"] for task in listed}
    a2a = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task_id}}
    assert http.post("/a2a", json=a2a, headers=bo).json()["error"]["code"] == -32001, "A2A's task not found"
    for caller in (ana, admin):
        seen = http.get(f"/api/v1/mesh/{task_id}", headers=caller)
        assert (seen.status_code, seen.json()["owner"]) == (200, "jwt:ana")
    assert task_id in {task["id"] for task in http.get("/api/v1/mesh", headers=admin).json()["tasks"]}


def test_a_listing_cursor_names_nothing_and_opens_only_for_its_caller(
    signed_in: RunningMesh, http: httpx2.Client
) -> None:
    """The review's attack (docs/status.md, "Listing tasks"): bo pages his own listing while ana's task
    is newer than his, and reads his cursor. Sealed, it shows no task id; handed to ana, or changed,
    it is a 400; and A2A's `nextPageToken` is sealed the same way."""
    import base64

    ana, bo = (bearer(issuer(signed_in).token(subject=name)) for name in ("cursor-ana", "cursor-bo"))
    mine = [http.post("/api/v1/mesh", json={"flow": "pipeline", "payload": {"n": n}}, headers=bo) for n in (1, 2)]
    theirs = http.post("/api/v1/mesh", json={"flow": "pipeline", "payload": {"n": 3}}, headers=ana)
    assert all(answer.status_code == 201 for answer in (*mine, theirs))
    first = http.get("/api/v1/mesh", params={"limit": "1"}, headers=bo).json()
    cursor = first["next_cursor"]
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    assert theirs.json()["id"].encode() not in raw
    assert mine[0].json()["id"].encode() not in raw
    assert http.get("/api/v1/mesh", params={"limit": "1", "cursor": cursor}, headers=bo).status_code == 200
    for who, given in ((ana, cursor), (bo, cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1])):
        refused = http.get("/api/v1/mesh", params={"limit": "1", "cursor": given}, headers=who)
        assert refused.status_code == 400, refused.text
        assert "cursor is not one this API returned to this caller" in refused.json()["message"]
    listed = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 1}}
    token = http.post("/a2a", json=listed, headers=bo).json()["result"]["nextPageToken"]
    assert token
    again = {**listed, "params": {"pageSize": 1, "pageToken": token}}
    assert "result" in http.post("/a2a", json=again, headers=bo).json()
    assert http.post("/a2a", json=again, headers=ana).json()["error"]["code"] == -32602


def test_a_signed_in_a2a_subscription_to_a_working_task_shows_its_fly_events_as_they_come_and_its_end(
    signed_in: RunningMesh,
) -> None:
    """Issue 47: docs/a2a.md, "Streaming", for a signed-in caller too: a task subscribed to while it
    works (a FLY event a second) is streamed as it goes, the task working, its FLY events as status
    updates while it works, each within a second of its emission (FLY's fast lane), then its output
    and the final status; not the task alone once it ended."""
    ana = bearer(issuer(signed_in).token(subject="ana"))
    # the task works: its first FLY events are behind the subscriber
    followed = timed_subscription(signed_in, {"ticks": 5}, headers=ana, after=2)
    states = [state(answer) for _, answer in followed]
    assert followed[0][1].HasField("task"), states
    assert states[0] == "TASK_STATE_WORKING", states
    assert states[-2:] == ["artifact", "TASK_STATE_COMPLETED"], states
    timed = flown_latencies(followed)
    ticks = [tick for tick, _ in timed]
    assert ticks == sorted(set(ticks)), states
    assert ticks[-1:] == [4], states
    assert max(latency for _, latency in timed) < 1.0, timed
    flown_at = [
        arrived
        for arrived, answer in followed
        if answer.HasField("status_update") and answer.status_update.status.message.parts
    ]
    assert followed[-1][0] - flown_at[0] >= 0.5, "the FLY events came while the task worked, not in one lump"


def test_a_signed_in_follower_gets_each_fly_event_within_a_second(signed_in: RunningMesh, http: httpx2.Client) -> None:
    """FLY's fast lane for a signed-in SSE follower: the gateway subscribes to the task's channel with its
    own role, whoever follows, and hands each event on as it comes."""
    ana = bearer(issuer(signed_in).token(subject="ana"))
    ticks = {"flow": "ticks", "payload": {"ticks": 4, "every": 0.3, "wait": 1}}
    created = http.post("/api/v1/mesh", json=ticks, headers=ana)
    assert created.status_code == 201, created.text
    with http.stream("GET", f"/api/v1/mesh/{created.json()['id']}/events", headers=ana) as sse:
        assert sse.status_code == 200
        flown: list[tuple[float, dict[str, Any]]] = [
            (time.time(), json.loads(event.data)["data"]) for event in httpx2.EventSource(sse) if event.event == "fly"
        ]
    assert [fly["tick"] for _, fly in flown] == list(range(4)), signed_in.errors()
    assert max(arrived - fly["at"] for arrived, fly in flown) < 1.0, flown


def test_mcp_lists_the_flows_for_a_signed_in_caller(signed_in: RunningMesh, http: httpx2.Client) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    answer = http.post("/mcp", json=call, headers=bearer(issuer(signed_in).token(subject="bo")))
    assert answer.status_code == 200, answer.text
    assert "pipeline" in {tool["name"] for tool in answer.json()["result"]["tools"]}


@pytest.mark.parametrize(
    ("claims", "reason"),
    [({"expires_in": -300}, "expired"), ({"aud": "another-api"}, "wrong_audience")],
    ids=["expired", "wrong-audience"],
)
def test_a_refused_token_is_a_401_that_names_why_and_where_to_sign_in(
    signed_in: RunningMesh, http: httpx2.Client, claims: dict[str, Any], reason: str
) -> None:
    refused = http.get("/api/v1/mesh", headers=bearer(issuer(signed_in).token(**claims)))
    assert refused.status_code == 401
    assert refused.json()["reason"] == reason
    metadata = f"{http.base_url}/.well-known/oauth-protected-resource".replace("//.well", "/.well")
    assert f'resource_metadata="{metadata}"' in refused.headers["www-authenticate"]


def test_a_forged_token_and_no_token_are_refused_for_streams_and_mcp_too(
    signed_in: RunningMesh, http: httpx2.Client, tmp_path: Path
) -> None:
    other = LocalIssuer.create(tmp_path, signed_in.stack.gateway_auth)  # the same claims, another key
    forged = bearer(other.token(subject="mallory", scopes=["asya/admin"]))
    assert http.get("/api/v1/mesh", headers=forged).json()["reason"] == "bad_signature"
    stream = http.get("/api/v1/mesh/some-task/events", headers=forged)  # served by the local server itself
    assert (stream.status_code, stream.json()["reason"]) == (401, "bad_signature")
    mcp = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert (mcp.status_code, mcp.json()["reason"]) == (401, "missing_token")
    assert "x-api-key" not in json.dumps(dict(mcp.headers)).lower()


def test_the_protected_resource_metadata_is_read_without_a_token(signed_in: RunningMesh, http: httpx2.Client) -> None:
    assert http.get("/health").status_code == 200
    metadata = http.get("/.well-known/oauth-protected-resource")
    assert metadata.status_code == 200
    assert metadata.json()["authorization_servers"] == [ISSUER]
    assert metadata.json()["scopes_supported"] == ["asya/admin"]
    assert metadata.json()["resource"] == str(http.base_url).rstrip("/")


def test_the_stacks_own_tools_sign_in_as_an_admin(signed_in: RunningMesh) -> None:
    gateway = signed_in.gateway()  # what asya demo, the console and the tests use
    assert gateway.health()["namespace"] == "itsignin"
    created = gateway.create_task({"flow": "pipeline", "payload": {"n": 3}})
    assert gateway.task(created["id"]) is not None


@pytest.fixture(scope="module")
def pooled(endpoint: LocalEndpoint, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningMesh]:
    """The sign-in mesh with `cognito: true`: the stack makes the pool, and MCP hosts register clients."""
    document = yaml.safe_load(MESH.read_text())
    document["namespace"] = "itpool"
    document["gateway"]["jwt"] = {"cognito": True, "audiences": ["asya-itest"]}
    for actor in document["actors"].values():
        actor["code"] = str(MESH.parent)
    mesh_file = tmp_path_factory.mktemp("pooled") / "mesh.yaml"
    mesh_file.write_text(yaml.safe_dump(document))
    with running(endpoint, mesh_file) as mesh:
        yield mesh


def test_with_cognito_the_local_issuer_plays_the_pool_the_stack_made(pooled: RunningMesh) -> None:
    """The pool, its server and client made through the local endpoint's Cognito API; the gateway trusts
    the pool's issuer and names the pool's admin scope, and a pool-shaped access token of the local
    issuer (the app client in `client_id`, no `aud`) is taken, as is the machine client's, an admin's."""
    mesh = pooled
    pool_id = mesh.stack.outputs["UserPoolId"]
    assert mesh.stack.outputs["Issuer"] == f"https://cognito-idp.us-east-1.amazonaws.com/{pool_id}"
    client = mesh.stack.client("cognito-idp").describe_user_pool_client(
        UserPoolId=pool_id, ClientId=mesh.stack.outputs["UserPoolClientId"]
    )
    assert client["UserPoolClient"]["ClientName"] == "asya-itpool"
    local = issuer(mesh)
    assert local.issuer == mesh.stack.outputs["Issuer"]
    assert mesh.stack.gateway_url is not None
    with httpx2.Client(base_url=mesh.stack.gateway_url, timeout=30, trust_env=False) as http:
        metadata = http.get("/.well-known/oauth-protected-resource").json()
        assert metadata["authorization_servers"] == [mesh.stack.gateway_url], "the gateway registers MCP hosts"
        assert metadata["scopes_supported"] == ["openid"], "what the people's client may ask for: no admin scope"
        token = local.token(subject="cy")  # a user's: the people's client may not ask for the admin scope
        assert "aud" not in jwt.decode(token, options={"verify_signature": False})
        created = http.post("/api/v1/mesh", json={"flow": "pipeline", "payload": {"n": 1}}, headers=bearer(token))
        assert created.status_code == 201, created.text
        machine = bearer(local.client_token())  # the machine client's, with the pool's admin scope
        assert http.get(f"/api/v1/mesh/{created.json()['id']}", headers=machine).status_code == 200


def test_the_official_mcp_client_signs_in_with_its_oauth_provider_and_runs_a_flow(pooled: RunningMesh) -> None:
    """An MCP host with nothing configured but the server's URL: the SDK's OAuth provider gets the 401,
    reads the protected resource's and the authorization server's metadata, registers a client of the
    pool at the gateway, follows the (local) hosted sign-in with PKCE, gets a token and calls a flow's
    tool; the task is the signed-in user's, and the registration made an app client of the pool."""
    from mcp import ClientSession
    from mcp.client.auth import OAuthClientProvider, TokenStorage
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

    class Memory(TokenStorage):
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.client: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    sent_back: list[str] = []

    async def follow_sign_in(authorization_url: str) -> None:
        """What a browser does: the hosted sign-in sends it on to the redirect with the code."""
        async with httpx2.AsyncClient(trust_env=False, follow_redirects=False) as browser:
            answer = await browser.get(authorization_url)
        assert answer.status_code == 302, answer.text
        sent_back.append(answer.headers["location"])

    async def callback() -> AuthorizationCodeResult:
        query = dict(parse_qsl(urlsplit(sent_back[-1]).query))
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"))

    assert pooled.stack.gateway_url is not None
    storage = Memory()
    provider = OAuthClientProvider(
        server_url=f"{pooled.stack.gateway_url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="asya integration host", redirect_uris=["http://127.0.0.1:33418/callback"]
        ),
        storage=storage,
        redirect_handler=follow_sign_in,
        callback_handler=callback,
    )

    async def session() -> tuple[Any, Any]:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30, trust_env=False) as http,
            streamable_http_client(f"{pooled.stack.gateway_url}/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            tools = await client.list_tools()
            return tools, await client.call_tool("pipeline", {"n": 6})

    tools, called = asyncio.run(session())
    assert "pipeline" in {tool.name for tool in tools.tools}
    assert called.is_error is False
    assert called.structured_content["output"] == {"n": 6, "prepped": True, "label": "even", "done": True}
    assert storage.client is not None
    assert storage.tokens is not None
    assert storage.tokens.refresh_token
    made = pooled.stack.client("cognito-idp").describe_user_pool_client(
        UserPoolId=pooled.stack.outputs["UserPoolId"], ClientId=storage.client.client_id
    )["UserPoolClient"]
    assert (made["ClientName"], made["CallbackURLs"]) == (
        "mcp-asya integration host",
        ["http://127.0.0.1:33418/callback"],
    )
    task = pooled.gateway().task(called.structured_content["id"])
    assert task is not None
    assert task["owner"] == "jwt:local-user"  # the user the hosted sign-in signed in
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert (claims["sub"], claims["client_id"]) == ("local-user", storage.client.client_id)
