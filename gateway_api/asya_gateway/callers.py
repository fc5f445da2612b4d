"""Who is calling the gateway, as the request tells (docs/callers.md): the identity a task created by
the request belongs to, and whether the caller sees every task of the namespace.

A task belongs to its creator's identity: `jwt:<subject>` for a signed-in caller, `iam:<principal ARN>`
for an AWS principal (SigV4), `key:<API key id>` for a holder of the mesh's API key. A task injected
straight into the first actor's queue has no owner, and only admins see it.

An assumed role's session (`arn:aws:sts::<account>:assumed-role/<role>/<session>`) is named by whoever
assumed the role: an ECS task by its task id, an EC2 instance by its id, a CI job as it likes. Keyed
on the session, a caller restarted under a new one would lose its tasks, so by default
(`gateway.ownership: role`) such a caller's tasks are its role's, `iam:arn:aws:sts::<account>:
assumed-role/<role>`, and the session is kept in the task's record (`created_by`) for audit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cached_property
from typing import Any, Literal, get_args

from asya import variables
from asya.names import MCP_PATH
from asya.variables import ConfigError
from asya_gateway.issuers import Issuer

OWNER_ATTRIBUTE = "owner"  # the task record's attribute that names its creator's identity
CREATED_BY_ATTRIBUTE = "created_by"  # ... and the principal that created it, when the owner is wider (a role)
OwnershipMode = Literal["role", "session"]  # what an assumed role's session's tasks belong to
PublicCard = Literal["full", "minimal", "off"]  # what the agent card tells a caller without credentials
# An assumed role's session as API Gateway names it; a role's name and a session's have no `/`.
_ROLE_SESSION = re.compile(r"^(?P<role>arn:aws[a-z-]*:sts::\d{12}:assumed-role/[^/]+)/[^/]+$")
_IAM_ROLE = re.compile(r"^arn:(?P<partition>aws[a-z-]*):iam::(?P<account>[^:]+):role/(?P<rest>.+)$")
_WILDCARD = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Caller:
    """`owner` is None when the request names nobody (a caller the gateway cannot tell apart);
    `principal` is the exact AWS principal when the owner is wider (its role), kept with what it creates."""

    owner: str | None
    admin: bool = False
    principal: str | None = None

    def sees(self, owner: str | None) -> bool:
        """A caller sees its own tasks; an admin sees every task, those that belong to nobody included."""
        return self.admin or (self.owner is not None and owner == self.owner)

    def creator(self) -> dict[str, str | None]:
        """What the record of a task it creates says of it: its owner, and the exact principal when
        that is narrower (the session of the role that owns the task), for audit."""
        return {OWNER_ATTRIBUTE: self.owner, CREATED_BY_ATTRIBUTE: self.principal}


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
    hosted_ui: str | None = None  # the pool's hosted sign-in (`jwt.hosted_ui`; locally its stand-in's)
    ownership: OwnershipMode = "role"  # `gateway.ownership`
    public_card: PublicCard = "minimal"  # `gateway.a2a.public_card`

    @classmethod
    def parse(cls, raw: str, jwks_url: str | None = None, hosted_ui: str | None = None) -> AuthSettings:
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
            hosted_ui=hosted_ui or (document.get("jwt") or {}).get("hosted_ui"),
            ownership=_one_of(document, "ownership", OwnershipMode, "role"),
            public_card=_one_of(document, "public_card", PublicCard, "minimal"),
        )

    @property
    def requestable_scopes(self) -> list[str]:
        """The scopes a client signing in may ask for (`scopes_supported` of the protected-resource
        metadata). The stack's Cognito pool lets its people's client ask for `openid` only: the admin
        scope is its machine client's, and Cognito refuses an authorization request that names it.
        Another issuer's clients may ask for the admin scopes the mesh lists."""
        return ["openid"] if self.jwt.get("cognito") else sorted(self.admin_scopes)

    @cached_property
    def admin_patterns(self) -> tuple[str, ...]:
        """`admins.principals`, and each IAM role among them as its sessions' role is named
        (`arn:aws:sts::<account>:assumed-role/<role>`), so that a role named either way makes every
        session of it an admin. A session's ARN leaves out the role's path: a role given with a path is
        matched by its exact name only, never by a wildcard that could name a role on another path."""
        rewritten = []
        for pattern in self.admin_principals:
            found = _IAM_ROLE.match(pattern)
            if found is None:
                continue
            path, _, name = found["rest"].rpartition("/")
            if not _WILDCARD.search(path) and not (path and _WILDCARD.search(name)):
                rewritten.append(f"arn:{found['partition']}:sts::{found['account']}:assumed-role/{name}")
        return (*self.admin_principals, *rewritten)

    @property
    def issuer(self) -> Issuer:
        """The issuer whose tokens sign callers in (`mode: jwt`)."""
        issuer, audiences = self.jwt.get("issuer"), self.jwt.get("audiences")
        if not issuer or not audiences:
            raise ConfigError(f"{variables.GATEWAY_AUTH.name}: mode jwt needs jwt.issuer and jwt.audiences")
        return Issuer(url=issuer, audiences=tuple(audiences), jwks_url=self.jwks_url, any_client=self.registers_clients)

    @property
    def registers_clients(self) -> bool:
        """Whether MCP hosts register clients of the pool the stack made (`asya_gateway.oauth`)."""
        return self.mode == "jwt" and bool(self.hosted_ui and (self.jwt.get("registration") or {}).get("max_clients"))


def aws_caller(event: dict[str, Any], auth: AuthSettings) -> Caller:
    """The caller API Gateway authorized before the function ran: an AWS principal (IAM), or the holder
    of the mesh's API key. The mesh has one key, handed to its operators, so its holder sees every task.
    A request with the key and no principal is the key's holder whatever the mode: on AWS an IAM-mode
    request always names its principal, and the local stack's stand-in for API Gateway checks the key.

    An assumed role's session owns its tasks as its role (`gateway.ownership: role`) or as itself
    (`session`); it is an admin if `admins.principals` names the session or its role."""
    context = event.get("requestContext") or {}
    identity = context.get("identity") or {}
    principal = identity.get("userArn") or _authorizer_iam(context).get("userArn")
    key_id = identity.get("apiKeyId")
    if auth.mode == "api_key" or (key_id and not principal):
        return Caller(owner=f"key:{key_id}" if key_id else None, admin=True)
    if not principal:
        return Caller(owner=None)
    session = _ROLE_SESSION.match(principal)
    role = session["role"] if session is not None else None
    named = (principal,) if role is None else (principal, role)
    admin = any(fnmatchcase(arn, pattern) for arn in named for pattern in auth.admin_patterns)
    if role is None or auth.ownership == "session":
        return Caller(owner=f"iam:{principal}", admin=admin)
    return Caller(owner=f"iam:{role}", admin=admin, principal=principal)


def _authorizer_iam(context: dict[str, Any]) -> dict[str, Any]:
    """`requestContext.authorizer.iam`: where an HTTP API names an IAM-authorized caller in payload
    format 2.0, and where it may in 1.0 (the REST API uses `identity`; either is taken)."""
    authorizer = context.get("authorizer")
    iam = authorizer.get("iam") if isinstance(authorizer, dict) else None
    return iam if isinstance(iam, dict) else {}


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
    registered = event.get("path") == MCP_PATH  # a registered MCP host's token opens MCP only
    claims = verifier(auth.issuer).verify(headers.get("authorization"), registered=registered)
    return jwt_caller(claims, auth)


def _one_of(document: dict[str, Any], key: str, choices: Any, default: str) -> Any:
    """`document[key]`, one of the Literal `choices` (absent: `default`, as an older stack's document)."""
    value = document.get(key, default)
    if value not in get_args(choices):
        allowed = ", ".join(get_args(choices))
        raise ConfigError(f"{variables.GATEWAY_AUTH.name}: {key!r} is one of {allowed}, not {value!r}")
    return value


def _names(value: Any) -> set[str]:
    """A claim that lists names: a list of strings, or one string."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return {item for item in value if isinstance(item, str)}
    return set()
