"""The gateway as the authorization server an MCP host signs in with (docs/callers.md, "MCP hosts"),
for the Cognito pool the stack makes (`gateway.jwt.cognito`).

An MCP host that gets a 401 reads the protected resource's metadata, then its authorization server's
metadata (RFC 8414), registers itself (RFC 7591) and signs its user in with the code flow and PKCE.
Cognito serves no RFC 8414 document at its issuer and has no dynamic registration, so the gateway
serves both: its metadata names the pool's hosted sign-in (`/oauth2/authorize`, `/oauth2/token`) and
its own `POST /oauth/register`, which makes an app client of the pool for each host (`Registrar`).

The registration route is open by nature (a host registers before anyone has signed in). What it can
do is bounded: a public client (no secret) of the code flow only, allowed the scope `openid` only,
sent back only to loopback over http or to a host the mesh lists over https (a client registered
with an attacker's redirect could otherwise take a user's code by a link to the real sign-in page);
at most `max_clients` of them (Cognito allows 1,000 app clients a pool, shared with the stack's two);
API Gateway throttles the route apart from the others; each registration is logged.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from asya.clients import LazyClient
from asya.names import OAUTH_REGISTER_PATH
from asya_gateway.callers import AuthSettings
from asya_gateway.oauth_errors import OAuthError

SCOPES = ("openid",)  # what a person's client of the pool may ask for (`AuthSettings.requestable_scopes`)
GRANT_TYPES = ("authorization_code", "refresh_token")
CLIENT_PREFIX = "mcp-"  # the registered clients' names in the pool: what the cap counts
DEFAULT_CLIENT_NAME = "mcp-host"
MAX_CLIENT_NAME = 100  # characters of `client_name`; Cognito takes 128 with the prefix
MAX_REDIRECT_URIS = 5
MAX_REDIRECT_URI = 1024  # Cognito's limit on a callback URL
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
# what a Cognito client name may not hold: its pattern `[\w\s+=,.@-]+` is matched as Java matches it,
# ASCII letters and digits only, so "Café" is refused (InvalidParameterException) unless replaced here
COGNITO_NAME_UNSAFE = re.compile(r"[^\w\s+=,.@-]", re.ASCII)
_log = logging.getLogger(__name__)


class RegistrationError(OAuthError):
    """A registration refused, with RFC 7591's codes."""


@dataclass(frozen=True)
class AuthorizationServer:
    """The pool the gateway registers clients of, where its hosted sign-in is, and the limits of
    registration (`gateway.jwt.registration`)."""

    issuer: str  # the pool's: its tokens' `iss`
    hosted_ui: str
    max_clients: int
    redirect_hosts: frozenset[str]

    @classmethod
    def of(cls, auth: AuthSettings) -> AuthorizationServer | None:
        """None unless the mesh signs in with the pool its stack made and registers clients of it."""
        if not auth.registers_clients or auth.hosted_ui is None:
            return None
        registration = auth.jwt["registration"]
        return cls(
            issuer=str(auth.jwt["issuer"]),
            hosted_ui=auth.hosted_ui.rstrip("/"),
            max_clients=int(registration["max_clients"]),
            redirect_hosts=frozenset(registration.get("redirect_hosts") or ()),
        )

    @property
    def pool_id(self) -> str:
        return self.issuer.rstrip("/").rsplit("/", 1)[-1]

    def metadata(self, base: str) -> dict[str, Any]:
        """RFC 8414's document, with this API (`base`) as the issuer a host discovered it by. Served at
        OpenID Connect's path too: behind a REST API's stage, that path under the stage is the one a
        host can reach. The tokens themselves name the pool (`iss`), which the gateway verifies."""
        return {
            "issuer": base,
            "authorization_endpoint": f"{self.hosted_ui}/oauth2/authorize",
            "token_endpoint": f"{self.hosted_ui}/oauth2/token",
            "revocation_endpoint": f"{self.hosted_ui}/oauth2/revoke",
            "registration_endpoint": f"{base}{OAUTH_REGISTER_PATH}",
            "jwks_uri": f"{self.issuer}/.well-known/jwks.json",
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "grant_types_supported": list(GRANT_TYPES),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    def client_request(self, body: Any) -> ClientRequest:
        """The registration `body` asks for, if this server grants it; `RegistrationError` naming the
        first field it does not."""
        if not isinstance(body, dict):
            raise RegistrationError("invalid_client_metadata", "the body is a JSON object of client metadata")
        redirects = body.get("redirect_uris")
        if not isinstance(redirects, list) or not 1 <= len(redirects) <= MAX_REDIRECT_URIS:
            raise RegistrationError("invalid_redirect_uri", f"redirect_uris: 1 to {MAX_REDIRECT_URIS} URLs")
        for uri in redirects:
            self._check_redirect(uri)
        grants = body.get("grant_types", ["authorization_code"])
        if not isinstance(grants, list) or not grants or not set(grants) <= set(GRANT_TYPES):
            raise RegistrationError("invalid_client_metadata", f"grant_types: only {', '.join(GRANT_TYPES)}")
        if body.get("response_types", ["code"]) != ["code"]:
            raise RegistrationError("invalid_client_metadata", "response_types: only code")
        if body.get("token_endpoint_auth_method", "none") != "none":
            raise RegistrationError(
                "invalid_client_metadata", "token_endpoint_auth_method: only none (a public client, with PKCE)"
            )
        asked = body.get("scope")
        if asked is not None and (not isinstance(asked, str) or not set(asked.split()) <= set(SCOPES)):
            raise RegistrationError("invalid_client_metadata", f"scope: only {' '.join(SCOPES)}")
        return ClientRequest(_client_name(body.get("client_name")), tuple(redirects), tuple(dict.fromkeys(grants)))

    def _check_redirect(self, uri: Any) -> None:
        if not isinstance(uri, str) or len(uri) > MAX_REDIRECT_URI:
            raise RegistrationError("invalid_redirect_uri", f"redirect_uris: URLs of at most {MAX_REDIRECT_URI}")
        try:
            parts = urlsplit(uri)
            host = (parts.hostname or "").lower()
        except ValueError:
            raise RegistrationError("invalid_redirect_uri", "redirect_uris: not a URL") from None
        if parts.fragment or parts.username or parts.password or not host:
            raise RegistrationError("invalid_redirect_uri", "redirect_uris: an absolute URL, no user or fragment")
        if parts.scheme == "http" and host in LOOPBACK:
            return
        if parts.scheme == "https" and (host in LOOPBACK or host in self.redirect_hosts):
            return
        allowed = ", ".join(sorted(self.redirect_hosts)) or "none"
        raise RegistrationError(
            "invalid_redirect_uri",
            f"redirect_uris: http or https on loopback, or https on a host the mesh lists "
            f"(gateway.jwt.registration.redirect_hosts: {allowed}); not {parts.scheme}://{host}",
        )


@dataclass(frozen=True)
class ClientRequest:
    """What a host registers: its name (as the pool's client is named) and where it is sent back."""

    name: str
    redirect_uris: tuple[str, ...]
    grant_types: tuple[str, ...]


def _client_name(name: Any) -> str:
    if name is None:
        return DEFAULT_CLIENT_NAME
    if not isinstance(name, str) or not 1 <= len(name.strip()) <= MAX_CLIENT_NAME or not name.isprintable():
        raise RegistrationError("invalid_client_metadata", f"client_name: 1 to {MAX_CLIENT_NAME} printable characters")
    return name.strip()


class Registrar:
    """Makes the pool's app clients that hosts register (`cognito-idp:CreateUserPoolClient`, and
    `ListUserPoolClients` to count them, on the pool alone: the gateway role's grant)."""

    cognito: LazyClient[Any] = LazyClient("cognito-idp")

    def __init__(self, server: AuthorizationServer, client: Any = None) -> None:
        self.server = server
        self._cognito = client

    def register(self, request: ClientRequest, source: str) -> dict[str, Any]:
        """RFC 7591's answer for a new client; refused past `max_clients`. Two registrations at once
        may both pass the count at its last free place; Cognito's own quota bounds the pool."""
        registered = self.registered()
        if registered >= self.server.max_clients:
            raise RegistrationError(
                "access_denied",
                f"this mesh registers at most {self.server.max_clients} clients and has them all "
                "(gateway.jwt.registration.max_clients): ask its operator",
                403,
            )
        from botocore.exceptions import ClientError  # with the client: see asya.clients

        try:
            made = self.cognito.create_user_pool_client(
                UserPoolId=self.server.pool_id,
                ClientName=f"{CLIENT_PREFIX}{COGNITO_NAME_UNSAFE.sub(' ', request.name)}"[:128],
                GenerateSecret=False,
                AllowedOAuthFlowsUserPoolClient=True,
                AllowedOAuthFlows=["code"],
                AllowedOAuthScopes=list(SCOPES),
                CallbackURLs=list(request.redirect_uris),
                SupportedIdentityProviders=["COGNITO"],
                ExplicitAuthFlows=["ALLOW_REFRESH_TOKEN_AUTH"],
                PreventUserExistenceErrors="ENABLED",
            )["UserPoolClient"]
        except ClientError as exc:
            refusal = _refusal(exc)
            if refusal is None:
                raise
            raise refusal from None
        _log.warning(  # at warning: every registration is kept, whatever the function's log level
            "registered an OAuth client: id %s, name %r, redirects %s, from %s (%d of %d)",
            made["ClientId"], request.name, ", ".join(request.redirect_uris), source,
            registered + 1, self.server.max_clients,
        )  # fmt: skip
        return {
            "client_id": made["ClientId"],
            "client_id_issued_at": int(time.time()),
            "client_name": request.name,
            "redirect_uris": list(request.redirect_uris),
            "grant_types": list(request.grant_types),
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "scope": " ".join(SCOPES),
        }

    def registered(self) -> int:
        """How many clients hosts registered: the pool's clients named with `CLIENT_PREFIX`."""
        count, more = 0, dict[str, str]()
        while True:
            page = self.cognito.list_user_pool_clients(UserPoolId=self.server.pool_id, MaxResults=60, **more)
            count += sum(str(c.get("ClientName", "")).startswith(CLIENT_PREFIX) for c in page["UserPoolClients"])
            if not page.get("NextToken"):
                return count
            more = {"NextToken": page["NextToken"]}


def _refusal(exc: Any) -> RegistrationError | None:
    """Cognito's refusal as the registration's: a callback it does not take, its quota, its throttle;
    None for any other error (a fault of the gateway's, answered 500)."""
    code = exc.response.get("Error", {}).get("Code", "")
    message = exc.response.get("Error", {}).get("Message", "")
    if code == "InvalidParameterException":
        return RegistrationError("invalid_redirect_uri", f"the pool refuses the client: {message}"[:300])
    if code == "LimitExceededException":
        return RegistrationError("access_denied", "the pool has as many app clients as Cognito allows", 403)
    if code == "TooManyRequestsException":
        return RegistrationError("temporarily_unavailable", "the pool is busy: register again shortly", 429)
    return None
