"""Who is calling the gateway, as the request tells (docs/callers.md): the identity a task created by
the request belongs to, and whether the caller sees every task of the namespace.

A task belongs to its creator's identity: `jwt:<subject>` for a signed-in caller, `iam:<principal ARN>`
for an AWS principal (SigV4), `key:<API key id>` for a holder of the mesh's API key. A task injected
straight into the first actor's queue has no owner, and only admins see it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from asya import variables
from asya.variables import ConfigError
from asya_gateway.issuers import Issuer

OWNER_ATTRIBUTE = "owner"  # the task record's attribute that names its creator's identity


@dataclass(frozen=True)
class Caller:
    """`owner` is None when the request names nobody (a caller the gateway cannot tell apart)."""

    owner: str | None
    admin: bool = False

    def sees(self, owner: str | None) -> bool:
        """A caller sees its own tasks; an admin sees every task, those that belong to nobody included."""
        return self.admin or (self.owner is not None and owner == self.owner)


# What code runs as when no request is behind it (the local stack's tools, the backstop): everything.
OPERATOR = Caller(owner=None, admin=True)


@dataclass(frozen=True)
class AuthSettings:
    """The mesh's `gateway.auth`, `gateway.jwt` and `gateway.admins`, as `ASYA_GATEWAY_AUTH` carries them."""

    mode: str = "iam"
    admin_scopes: frozenset[str] = frozenset()
    admin_roles: frozenset[str] = frozenset()
    admin_principals: tuple[str, ...] = ()
    jwt: dict[str, Any] = field(default_factory=dict)
    jwks_url: str | None = None  # the local stack's issuer's keys (`ASYA_GATEWAY_JWKS_URL`): no discovery

    @classmethod
    def parse(cls, raw: str, jwks_url: str | None = None) -> AuthSettings:
        name = variables.GATEWAY_AUTH.name
        try:
            document = json.loads(raw) if raw else {}
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{name} is not JSON: {exc}") from None
        if not isinstance(document, dict) or document.get("mode", "iam") not in ("iam", "api_key", "jwt"):
            raise ConfigError(f"{name}: 'mode' is one of iam, api_key, jwt")
        admins = document.get("admins") or {}
        return cls(
            mode=document.get("mode", "iam"),
            admin_scopes=frozenset(admins.get("scopes", ())),
            admin_roles=frozenset(admins.get("roles", ())),
            admin_principals=tuple(admins.get("principals", ())),
            jwt=document.get("jwt") or {},
            jwks_url=jwks_url,
        )

    @property
    def issuer(self) -> Issuer:
        """The issuer whose tokens sign callers in (`mode: jwt`)."""
        issuer, audiences = self.jwt.get("issuer"), self.jwt.get("audiences")
        if not issuer or not audiences:
            raise ConfigError(f"{variables.GATEWAY_AUTH.name}: mode jwt needs jwt.issuer and jwt.audiences")
        return Issuer(url=issuer, audiences=tuple(audiences), jwks_url=self.jwks_url)


def aws_caller(event: dict[str, Any], auth: AuthSettings) -> Caller:
    """The caller API Gateway authorized before the function ran: an AWS principal (IAM), or the holder
    of the mesh's API key. The mesh has one key, handed to its operators, so its holder sees every task.
    A request with the key and no principal is the key's holder whatever the mode: on AWS an IAM-mode
    request always names its principal, and the local stack's stand-in for API Gateway checks the key."""
    identity = (event.get("requestContext") or {}).get("identity") or {}
    principal = identity.get("userArn")
    key_id = identity.get("apiKeyId")
    if auth.mode == "api_key" or (key_id and not principal):
        return Caller(owner=f"key:{key_id}" if key_id else None, admin=True)
    if not principal:
        return Caller(owner=None)
    admin = any(fnmatchcase(principal, pattern) for pattern in auth.admin_principals)
    return Caller(owner=f"iam:{principal}", admin=admin)


def jwt_caller(claims: dict[str, Any], auth: AuthSettings) -> Caller:
    """A signed-in caller: its subject owns its tasks; it is an admin when its token grants one of the
    mesh's admin scopes (`scope`, space-separated, or `scp`, a list) or roles (`cognito:groups`,
    `groups`, `roles`)."""
    scope = claims.get("scope")
    scopes = set(scope.split()) if isinstance(scope, str) else set()
    scopes |= _names(claims.get("scp"))
    roles = _names(claims.get("cognito:groups")) | _names(claims.get("groups")) | _names(claims.get("roles"))
    admin = not scopes.isdisjoint(auth.admin_scopes) or not roles.isdisjoint(auth.admin_roles)
    return Caller(owner=f"jwt:{claims['sub']}", admin=admin)


def caller_of(event: dict[str, Any], auth: AuthSettings) -> Caller:
    """Who sent this API Gateway proxy event, by the mesh's `gateway.auth`: a signed-in caller whose
    bearer token the function verifies (`jwt`; `asya_gateway.issuers.SignInRefusedError` if it does not
    verify), or the caller API Gateway authorized (`iam`, `api_key`)."""
    if auth.mode != "jwt":
        return aws_caller(event, auth)
    from asya_gateway.signin import verifier  # PyJWT and its cryptography: loaded by jwt-mode meshes only

    headers = {str(name).lower(): value for name, value in (event.get("headers") or {}).items()}
    claims = verifier(auth.issuer).verify(headers.get("authorization"))
    return jwt_caller(claims, auth)


def _names(value: Any) -> set[str]:
    """A claim that lists names: a list of strings, or one string."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return {item for item in value if isinstance(item, str)}
    return set()
