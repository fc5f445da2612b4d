"""The mesh's A2A agent card (docs/a2a.md): the namespace's name, the JSON-RPC endpoint, the mesh's flows
as skills (each flow's input schema in the card's extension `INPUT_SCHEMAS`, since A2A's skill has no
field for one), and the security scheme of the mesh's `gateway.auth`, in A2A 1.0's shape with 0.3's
fields beside it.

The card at `/.well-known/agent-card.json` is read without credentials, and the API's URL is reachable
from the internet: by default (`gateway.a2a.public_card: minimal`) it tells how to call the mesh and
sign in, and leaves the skills, their descriptions and input schemas (examples included) to A2A's
authenticated extended card, which a caller with the mesh's credentials reads through the JSON-RPC
endpoint (`extended_card`)."""

from __future__ import annotations

from typing import Any

from asya_gateway.a2a_objects import JSON, V03, V1
from asya_gateway.settings import GatewaySettings

AGENT_VERSION = "0.1.0"
ENDPOINT = "/a2a"
SKILL = "skill"  # the message metadata's key that names the flow to run
# The card's extension that carries each skill's input schema: params `{"skills": {id: {"inputSchema"}}}`
INPUT_SCHEMAS = "urn:asya:a2a:skill-input-schemas:v1"


def public_card(settings: GatewaySettings, base: str) -> dict[str, Any] | None:
    """The card a caller without credentials reads, as `gateway.a2a.public_card` says: every skill
    (`full`), none (`minimal`), or no card at all (`off`: None)."""
    shown = settings.auth.public_card
    if shown == "off":
        return None
    return extended_card(settings, base) if shown == "full" else _card(settings, base, skills=False)


def extended_card(settings: GatewaySettings, base: str) -> dict[str, Any]:
    """The whole card, every flow a skill with its input schema: for a caller with credentials."""
    return _card(settings, base, skills=True)


def _card(settings: GatewaySettings, base: str, *, skills: bool) -> dict[str, Any]:
    """The mesh as an agent, in A2A 1.0's shape with A2A 0.3's fields beside it (`url`,
    `preferredTransport`, `protocolVersion`, `security`, `supportsAuthenticatedExtendedCard` and each
    security scheme's 0.3 fields), as the SDK's own servers write a card both versions read. Without
    `skills`, the card names no flow anywhere."""
    url = f"{base}{ENDPOINT}"
    flows = settings.flows if skills else {}
    schemes, requirements = _security(settings)
    names = ", ".join(sorted(flows)) or "none"
    which = (
        f"each skill is one of its flows ({names})"
        if skills
        else "its skills (flows) are in its authenticated extended card, for a caller with its credentials"
    )
    extensions = [_input_schemas(flows)] if skills else []
    return {
        "name": settings.namespace,
        "description": (
            f"The asya mesh {settings.namespace!r}: {which}. A message runs the flow named by its metadata's "
            f"{SKILL!r} (a mesh of one flow needs none) on its data part, as a task; a task waiting for a "
            "person's input (input-required) is resumed by a message naming it."
        ),
        "version": AGENT_VERSION,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": V1},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": V03},
        ],
        "capabilities": {
            "streaming": True,
            "pushNotifications": False,
            "extendedAgentCard": True,
            "extensions": extensions,
        },
        "securitySchemes": schemes,
        "securityRequirements": [{"schemes": {name: {"list": []}}} for name in requirements],
        "defaultInputModes": [JSON],
        "defaultOutputModes": [JSON],
        "skills": [_skill(name, flow) for name, flow in sorted(flows.items())],
        # A2A 0.3's fields: its clients read the first interface here
        "url": url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "security": [{name: []} for name in requirements],
        "supportsAuthenticatedExtendedCard": True,
    }


def _input_schemas(flows: dict[str, Any]) -> dict[str, Any]:
    return {
        "uri": INPUT_SCHEMAS,
        "description": "Each skill's input: the JSON Schema its message's data part must match, "
        "at params.skills.<skill id>.inputSchema.",
        "required": False,
        "params": {"skills": {name: {"inputSchema": flow.input_schema} for name, flow in sorted(flows.items())}},
    }


def _skill(name: str, flow: Any) -> dict[str, Any]:
    way = "a program whose path depends on the input" if flow.program else " → ".join(flow.route)
    return {
        "id": name,
        "name": name,
        "description": flow.description or f"Runs flow {name!r} ({way}) as a task.",
        "tags": ["flow"],
        "inputModes": [JSON],
        "outputModes": [JSON],
    }


def _security(settings: GatewaySettings) -> tuple[dict[str, Any], list[str]]:
    """The card's security schemes (each in 1.0's shape and 0.3's at once) and the names of those a
    caller may use, any one of them: SigV4 (`iam`), the mesh's API key (`api_key`), or a bearer token
    of the OpenID Connect issuer (`jwt`)."""
    auth = settings.auth
    if auth.mode == "api_key":
        key = {"name": "x-api-key", "description": "The mesh's API key, in the x-api-key header."}
        scheme = {"apiKeySecurityScheme": {"location": "header", **key}, "type": "apiKey", "in": "header", **key}
        return {"apiKey": scheme}, ["apiKey"]
    if auth.mode == "jwt":
        bearer = {
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "A token of the mesh's OpenID Connect issuer for one of its audiences.",
        }
        schemes: dict[str, Any] = {"bearer": {"httpAuthSecurityScheme": bearer, "type": "http", **bearer}}
        issuer = auth.jwt.get("issuer")
        if not isinstance(issuer, str) or not issuer:  # a pool the stack creates: its issuer is not told here
            return schemes, ["bearer"]
        oidc = {
            "openIdConnectUrl": f"{issuer.rstrip('/')}/.well-known/openid-configuration",
            "description": f"Sign in with {issuer}; send its token as a bearer token.",
        }
        schemes["oidc"] = {"openIdConnectSecurityScheme": oidc, "type": "openIdConnect", **oidc}
        return schemes, ["oidc", "bearer"]
    sigv4 = {
        "scheme": "AWS4-HMAC-SHA256",
        "description": "AWS Signature Version 4 (SigV4): sign each request with AWS credentials allowed to "
        "invoke this API (service execute-api).",
    }
    return {"sigv4": {"httpAuthSecurityScheme": sigv4, "type": "http", **sigv4}}, ["sigv4"]
