"""The `ASYA_*` variables the gateway reads first (its API, stream and backstop functions;
`asya_gateway.settings`): the gateway's table of `docs/configuration.md`. `asya.variables` gathers them
with every other component's."""

from __future__ import annotations

from typing import Any

from asya.env_variable import Component, Variable, number, text, text_or_none

_GATEWAY = (Component.GATEWAY,)

FLY_REALTIME_DOMAIN = Variable(
    "ASYA_FLY_REALTIME_DOMAIN",
    (Component.GATEWAY,),
    "the real-time (WebSocket) domain of the same API: a follow subscribes to its task's channel there",
    None,
    text_or_none,
)

FLOWS = Variable(
    "ASYA_FLOWS",
    _GATEWAY,
    "JSON `{flow: {route, description, timeout, input_schema}}`: the mesh's flows",
    "",
    text,
    "`{}`",
)

FLOW_PROGRAMS = Variable(
    "ASYA_FLOW_PROGRAMS",
    _GATEWAY,
    "path of the JSON file `{flow: program}` of the program flows' compiled programs (docs/flows.md)",
    "",
    text,
    "none",
)

# The longest a gateway request waits for a task's end (`POST /mesh?wait=`, MCP tool calls): API Gateway
# REST ends an integration at 29 s, and the answer still has to be written after the wait.
WAIT_MAX_SECONDS = 25.0

MCP_WAIT = Variable(
    "ASYA_MCP_WAIT_SECONDS",
    _GATEWAY,
    "how long an MCP tool call waits for its task's result before it answers with the task's id (0: not at all)",
    20.0,
    number(0, WAIT_MAX_SECONDS),
)

GATEWAY_AUTH = Variable(
    "ASYA_GATEWAY_AUTH",
    _GATEWAY,
    "JSON `{mode, admins: {scopes, roles, principals}, ownership, public_card, "
    "jwt: {issuer, audiences, hosted_ui, registration}}`: "
    "how callers prove who they are, who sees every task, whose an assumed role's session's tasks are and "
    "what the agent card shows without credentials (the mesh's `gateway.auth`, `gateway.jwt`, "
    "`gateway.admins`, `gateway.ownership`, `gateway.a2a.public_card`)",
    "",
    text,
    '`{"mode": "iam"}`',
)

GATEWAY_JWKS_URL = Variable(
    "ASYA_GATEWAY_JWKS_URL",
    _GATEWAY,
    "local stack only: where the sign-in issuer's keys (JWKS) are, the local issuer's on loopback; the "
    "deployed gateway finds them through the issuer's OpenID configuration",
    None,
    text_or_none,
)

GATEWAY_HOSTED_UI_URL = Variable(
    "ASYA_GATEWAY_HOSTED_UI_URL",
    _GATEWAY,
    "local stack only: where the Cognito pool's hosted sign-in (`/oauth2/authorize`, `/oauth2/token`) is "
    "played, by the local issuer on loopback; the deployed gateway names the pool's domain",
    None,
    text_or_none,
)

GATEWAY_CORS_ORIGINS = Variable(
    "ASYA_GATEWAY_CORS_ORIGINS",
    _GATEWAY,
    "the browser origins allowed to call the gateway, comma-separated (the mesh's `gateway.cors_origins`): "
    "its answers to them carry `Access-Control-Allow-Origin`, and it answers their preflights",
    "",
    text,
    "none",
)

GATEWAY_CURSOR_SECRET = Variable(
    "ASYA_GATEWAY_CURSOR_SECRET",
    _GATEWAY,
    "the ARN of the Secrets Manager secret the gateway's cursors are sealed with (AES-GCM, a key derived "
    "from it); unset: a key made for this process, whose cursors no other process opens",
    None,
    text_or_none,
)

PUBLIC_URL = Variable(
    "ASYA_PUBLIC_URL",
    _GATEWAY,
    "the base URL the API hands out in links, when it is not the one requests arrive at (a custom domain)",
    None,
    text_or_none,
    "the request's",
)

VARIABLES: tuple[Variable[Any], ...] = (
    FLY_REALTIME_DOMAIN,
    FLOWS,
    FLOW_PROGRAMS,
    MCP_WAIT,
    GATEWAY_AUTH,
    GATEWAY_JWKS_URL,
    GATEWAY_HOSTED_UI_URL,
    GATEWAY_CORS_ORIGINS,
    GATEWAY_CURSOR_SECRET,
    PUBLIC_URL,
)
