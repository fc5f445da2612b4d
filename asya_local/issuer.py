"""The local issuer: sign-in (`gateway.auth: jwt`) on this machine, without a network.

The local stack plays the mesh's OpenID Connect issuer (or its Cognito pool): an RSA key pair in the
stack's state folder, its public key served as a JWKS on loopback beside an OpenID configuration, and
tokens signed with it that carry the issuer the deployed gateway trusts (`iss` as the mesh file says, or
the pool's URL). The mesh file stays the one deployed: the local gateway function is told where this
issuer's keys are through `ASYA_GATEWAY_JWKS_URL`, a local-only variable, instead of discovering them.

`asya token` prints a token of it (`asya_local.token_cli`); the local stack's own tools sign in with one
that grants every admin scope and role the mesh declares (`admin_token`). As a Cognito pool it mints only
what the pool would (`clients`, read from the local endpoint's pool, `asya_local.cognito_pools`): a
user's token (the code-flow client's) carries no scope that client may not ask for, so no custom scope;
the admin scope comes only in a client credentials token of the machine client (`client_token`), which
names no user and no group; and the local tools sign in as a user of the `admins` group.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from asya_gateway.oauth_errors import OAuthError
from asya_local.gateway_client import BearerAuth, GatewayClient
from asya_local.json_answer import send_json

ALGORITHM = "RS256"
KEY_FILE = "local-issuer.pem"
DISCOVERY = "/.well-known/openid-configuration"
JWKS_PATH = "/.well-known/jwks.json"
AUTHORIZE_PATH = "/oauth2/authorize"  # the pool's hosted sign-in (`asya_local.hosted_sign_in`)
TOKEN_PATH = "/oauth2/token"
LOCAL_SUBJECT = "asya-local"  # who the local stack's own tools sign in as
DEFAULT_EXPIRES_IN = 3600


class NotGrantedError(ValueError):
    """The pool would not issue such a token: the message says what it grants instead."""


class SignInError(OAuthError):
    """A request the pool's hosted sign-in refuses (`asya_local.hosted_sign_in`)."""


@dataclass(frozen=True)
class PoolClient:
    """An app client of the pool: its id, OAuth flows (`code`, `client_credentials`) and allowed scopes."""

    id: str
    flows: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()

    @classmethod
    def of(cls, described: dict[str, Any]) -> PoolClient:
        return cls(described["id"], tuple(described.get("flows", ())), tuple(described.get("scopes", ())))


@dataclass(frozen=True)
class LocalIssuer:
    """Signs tokens as `issuer` for `audience`; `admin_scopes` and `admin_roles` are the mesh's. As a
    Cognito pool (`cognito`), its tokens are shaped as the pool's access tokens: the app client in
    `client_id` (no `aud`), `token_use: access`, groups in `cognito:groups`."""

    issuer: str
    audience: str
    key_file: Path
    admin_scopes: tuple[str, ...] = ()
    admin_roles: tuple[str, ...] = ()
    cognito: bool = False
    clients: tuple[PoolClient, ...] = ()  # as a Cognito pool, its clients; none: any claims are minted

    @classmethod
    def create(cls, folder: Path, auth: dict[str, Any], clients: Iterable[PoolClient] = ()) -> LocalIssuer:
        """A new key pair in `folder`, for the gateway's `ASYA_GATEWAY_AUTH` document (`mode: jwt`)."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key_file = folder / KEY_FILE
        key_file.touch(mode=0o600)  # the private key: only its owner reads it
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return cls.of(key_file, auth, clients)

    @classmethod
    def of(cls, key_file: Path, auth: dict[str, Any], clients: Iterable[PoolClient] = ()) -> LocalIssuer:
        """The issuer whose key is `key_file`, for the `ASYA_GATEWAY_AUTH` document `auth`."""
        admins = auth.get("admins") or {}
        return cls(
            issuer=auth["jwt"]["issuer"],
            audience=auth["jwt"]["audiences"][0],
            key_file=key_file,
            admin_scopes=tuple(admins.get("scopes", ())),
            admin_roles=tuple(admins.get("roles", ())),
            cognito=bool(auth["jwt"].get("cognito")),
            clients=tuple(clients),
        )

    def _private_key(self) -> Any:
        return serialization.load_pem_private_key(self.key_file.read_bytes(), password=None)

    @property
    def key_id(self) -> str:
        """The key's id (`kid`): its file's, stable for the stack's life."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, self.key_file.read_bytes().decode()))

    def jwks(self) -> dict[str, Any]:
        public = jwt.algorithms.RSAAlgorithm.to_jwk(self._private_key().public_key(), as_dict=True)
        return {"keys": [{**public, "kid": self.key_id, "use": "sig", "alg": ALGORITHM}]}

    def token(
        self,
        subject: str = LOCAL_SUBJECT,
        scopes: Iterable[str] = (),
        roles: Iterable[str] = (),
        expires_in: float = DEFAULT_EXPIRES_IN,
        **claims: Any,
    ) -> str:
        """A signed access token: `sub`, `scope` (space-separated), `groups`, valid `expires_in` seconds
        from now (negative: already expired); `claims` add to or replace any of them. As a pool with
        clients, a user's token of its code-flow client, with only the scopes that client may ask for."""
        now = int(time.time())
        audience = {"client_id": self.audience, "token_use": "access"} if self.cognito else {"aud": self.audience}
        people = self._client("code")
        if people is not None:
            audience["client_id"] = people.id
            scopes = _granted(people, scopes, "a user's token (the code-flow client's)")
        body: dict[str, Any] = {
            "iss": self.issuer,
            **audience,
            "sub": subject,
            "iat": min(now, now + int(expires_in)),
            "exp": now + int(expires_in),
            "jti": str(uuid.uuid4()),
        }
        if scopes := " ".join(scopes):
            body["scope"] = scopes
        if groups := list(roles):
            body["cognito:groups" if self.cognito else "groups"] = groups
        return jwt.encode({**body, **claims}, self._private_key(), algorithm=ALGORITHM, headers={"kid": self.key_id})

    def client_token(self, scopes: Iterable[str] = (), expires_in: float = DEFAULT_EXPIRES_IN) -> str:
        """A client credentials token of the pool's machine client, as its token endpoint answers: the
        client is the subject, no groups, the scopes asked for (all it may have when none are)."""
        machine = self._client("client_credentials")
        if machine is None:
            raise NotGrantedError("the issuer has no client credentials client (a Cognito pool of the mesh's has)")
        granted = _granted(machine, scopes, "a client credentials token") or machine.scopes
        claims = {"client_id": machine.id, "token_use": "access", "scope": " ".join(granted)}
        return self.token(subject=machine.id, expires_in=expires_in, **claims)

    def admin_token(self) -> str:
        """What the local stack's own tools send: every admin scope and role the mesh declares; as a
        pool with clients, a user of its admin groups (a user's token carries no custom scope)."""
        if self._client("code") is not None:
            return self.token(roles=self.admin_roles)
        return self.token(scopes=self.admin_scopes, roles=self.admin_roles)

    def _client(self, flow: str) -> PoolClient | None:
        return next((client for client in self.clients if flow in client.flows), None)


def _granted(client: PoolClient, scopes: Iterable[str], what: str) -> list[str]:
    """`scopes`, when the client may have them all (Cognito refuses a request for any other)."""
    asked = list(scopes)
    refused = [scope for scope in asked if scope not in client.scopes]
    if refused:
        allowed = ", ".join(client.scopes) or "none"
        raise NotGrantedError(
            f"the pool does not grant {', '.join(refused)} in {what}: its scopes are {allowed}. A user is an "
            "admin by a group (--role admins); the admin scope is the machine client's (--client-credentials)"
        )
    return asked


def local_gateway(url: str, api_key: str, issuer: LocalIssuer | None, token: str | None = None) -> GatewayClient:
    """A client of the local stack's gateway as its own tools use it: with the API key, or signed in as
    an admin by the local issuer when the mesh has sign-in (`issuer`); a bearer `token` given is sent
    instead of the admin's (`--token`: a caller of the user's choosing)."""
    if token:
        return GatewayClient(url, api_key if issuer is None else None, auth=BearerAuth(lambda: token))
    if issuer is None:
        return GatewayClient(url, api_key)
    return GatewayClient(url, auth=BearerAuth(issuer.admin_token))


def issuer_state(issuer: LocalIssuer | None, auth: dict[str, Any]) -> dict[str, str]:
    """What the state file keeps of the local issuer (`asya_local.local_state`), for `of_state`."""
    if issuer is None:
        return {}
    clients = [{"id": c.id, "flows": list(c.flows), "scopes": list(c.scopes)} for c in issuer.clients]
    return {"issuer_key": str(issuer.key_file), "gateway_auth": json.dumps(auth), "issuer_clients": json.dumps(clients)}


def of_state(state: dict[str, str]) -> LocalIssuer | None:
    """The local issuer a running stack's state file names; None when its mesh has no sign-in."""
    if not state.get("issuer_key"):
        return None
    clients = [PoolClient.of(described) for described in json.loads(state.get("issuer_clients") or "[]")]
    return LocalIssuer.of(Path(state["issuer_key"]), json.loads(state["gateway_auth"]), clients)


class SignInPages(Protocol):
    """The pool's hosted sign-in the server plays (`asya_local.hosted_sign_in.HostedSignIn`)."""

    def authorize(self, query: dict[str, str]) -> str: ...

    def token(self, form: dict[str, str]) -> dict[str, Any]: ...


class IssuerServer:
    """The issuer's OpenID configuration and JWKS on loopback, served by a thread until `stop`; as the
    mesh's pool, its hosted sign-in too (`sign_in`: `/oauth2/authorize`, `/oauth2/token`)."""

    def __init__(self, issuer: LocalIssuer, port: int = 0, sign_in: SignInPages | None = None) -> None:
        self.issuer = issuer
        self.sign_in = sign_in
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), partial(_Handler, server_of=self))
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}{JWKS_PATH}"

    def documents(self) -> dict[str, dict[str, Any]]:
        configuration = {
            "issuer": self.issuer.issuer,
            "jwks_uri": self.jwks_url,
            "id_token_signing_alg_values_supported": [ALGORITHM],
            "scopes_supported": list(self.issuer.admin_scopes),
        }
        return {DISCOVERY: configuration, JWKS_PATH: self.issuer.jwks()}

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    def __init__(self, *args: Any, server_of: IssuerServer, **kwargs: Any) -> None:
        self.server_of = server_of  # set first: the base class handles the request in __init__
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        sign_in = self.server_of.sign_in
        if path == AUTHORIZE_PATH and sign_in is not None:
            try:
                where = sign_in.authorize(dict(parse_qsl(query)))
            except SignInError as refused:
                return self._answer(refused.status, refused.answer())
            self.send_response(302)
            self.send_header("Location", where)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        document = self.server_of.documents().get(path)
        return self._answer(200 if document is not None else 404, document or {"message": "not found"})

    def do_POST(self) -> None:
        sign_in = self.server_of.sign_in
        if self.path.split("?")[0] != TOKEN_PATH or sign_in is None:
            return self._answer(404, {"message": "not found"})
        length = int(self.headers.get("Content-Length") or 0)
        form = dict(parse_qsl(self.rfile.read(length).decode()))
        try:
            return self._answer(200, sign_in.token(form))
        except SignInError as refused:
            return self._answer(refused.status, refused.answer())

    def _answer(self, status: int, document: dict[str, Any]) -> None:
        send_json(self, status, document)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the gateway fetches the keys once per execution environment."""
