"""Where a client signs in (`gateway.auth: jwt`): the OAuth protected-resource documents, and the gateway
standing as MCP hosts' authorization server for the stack's Cognito pool, registering their clients
(RFC 7591). Routes of the API function (`asya_gateway.api`), readable without credentials."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types

from asya.names import OAUTH_REGISTER_PATH
from asya_gateway.early_answers import WELL_KNOWN
from asya_gateway.oauth import Registrar, RegistrationError
from asya_gateway.request_context import base_url, built_function, service
from asya_gateway.resolver import app
from asya_gateway.task_error import TaskError


@app.get(f"{WELL_KNOWN}/oauth-protected-resource", summary="Where to sign in (RFC 9728)")
def protected_resource() -> dict[str, Any]:
    return _protected_resource("")


@app.get(f"{WELL_KNOWN}/oauth-protected-resource/mcp", summary="Where to sign in, for the MCP endpoint")
def protected_mcp() -> dict[str, Any]:
    return _protected_resource("/mcp")


def _protected_resource(path: str) -> dict[str, Any]:
    """This API as an OAuth protected resource (`gateway.auth: jwt` only): the issuer to sign in with,
    how to send the token, and the scopes a client may ask for (`AuthSettings.requestable_scopes`)."""
    auth = service().settings.auth
    if auth.mode != "jwt":
        raise TaskError(404, "this gateway takes no sign-in (gateway.auth is not jwt)")
    server = built_function().registrar  # the gateway stands as the pool's, where it registers clients
    return {
        "resource": f"{base_url()}{path}",
        "authorization_servers": [base_url() if server is not None else auth.issuer.url],
        "bearer_methods_supported": ["header"],
        "scopes_supported": auth.requestable_scopes,
    }


@app.get(f"{WELL_KNOWN}/oauth-authorization-server", summary="The authorization server MCP hosts use (RFC 8414)")
def authorization_server() -> dict[str, Any]:
    return _registrar().server.metadata(base_url())


@app.get(f"{WELL_KNOWN}/openid-configuration", summary="The same document, where a host behind a stage finds it")
def authorization_server_oidc() -> dict[str, Any]:
    return _registrar().server.metadata(base_url())


@app.post(OAUTH_REGISTER_PATH, summary="Register an MCP host's client of the mesh's Cognito pool (RFC 7591)")
def register_client() -> Response[Any]:
    registrar, event = _registrar(), app.current_event
    try:
        try:
            body = event.json_body
        except ValueError:
            raise RegistrationError("invalid_client_metadata", "the body is not JSON") from None
        answer = registrar.register(registrar.server.client_request(body), event.request_context.identity.source_ip)
    except RegistrationError as refused:
        return Response(status_code=refused.status, content_type=content_types.APPLICATION_JSON, body=refused.answer())
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=answer)


def _registrar() -> Registrar:
    registrar = built_function().registrar
    if registrar is None:
        raise TaskError(404, "this gateway registers no clients (it needs gateway.jwt.cognito and registration)")
    return registrar
