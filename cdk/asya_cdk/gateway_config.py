"""The gateway's part of the mesh file (`gateway:`): who may call it, through which kind of API, and who
sees every task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from asya.cors import ORIGIN_PATTERN
from asya.variables import MCP_WAIT, WAIT_MAX_SECONDS
from asya_cdk.actor_config import SYSTEM_LOG_LEVEL, StrictModel, SystemLogLevel

# Cognito's prefix domains: lowercase letters, digits and '-' (not first or last), without these words
COGNITO_DOMAIN_PREFIX = r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"
COGNITO_RESERVED_WORDS = ("aws", "amazon", "cognito")
REDIRECT_HOST = r"^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$"  # a DNS name, lowercase, no port


# API Gateway's throttle of `POST /oauth/register` alone, within the stage's: a registration is a
# host's first sign-in, rare, and each one makes an app client of the pool
REGISTRATION_RATE = 0.2  # a second on average: 12 a minute
REGISTRATION_BURST = 5


class RegistrationConfig(StrictModel):
    """Dynamic client registration for MCP hosts (RFC 7591, docs/callers.md), served by the gateway for
    the pool `cognito: true` makes, since Cognito has none: each registration makes an app client of the
    pool. `max_clients` caps how many (Cognito allows 1,000 app clients a pool; 0: no registration);
    `redirect_hosts` are the hosts a registered client may be sent back to over https, beside loopback
    over http (none by default: a host's sign-in page then runs on the user's own machine)."""

    max_clients: int = Field(default=100, ge=0, le=900)
    redirect_hosts: list[Annotated[str, Field(pattern=REDIRECT_HOST, max_length=253)]] = Field(
        default_factory=list, max_length=20
    )


class JwtConfig(StrictModel):
    """Sign-in with an OpenID Connect provider (`gateway.auth: jwt`, docs/callers.md): the issuer whose
    tokens the gateway accepts and the audiences a token must name one of. `cognito: true` has the
    stack create a Cognito user pool and trust it instead of `issuer`; its hosted sign-in pages are at
    `https://<domain_prefix>.auth.<region>.amazoncognito.com` (default prefix: `asya-<ns>-<account>`)."""

    issuer: Annotated[str, Field(pattern=r"^https://[^\s/]+(/\S*)?$", max_length=512)] | None = None
    audiences: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(min_length=1, max_length=10)
    cognito: bool = False
    domain_prefix: Annotated[str, Field(pattern=COGNITO_DOMAIN_PREFIX, max_length=63)] | None = None
    registration: RegistrationConfig = Field(default_factory=RegistrationConfig)

    @model_validator(mode="after")
    def _one_issuer(self) -> JwtConfig:
        if (self.issuer is None) == (not self.cognito):
            raise ValueError("give exactly one of 'issuer' (an OIDC issuer's https URL) or 'cognito: true'")
        if "registration" in self.model_fields_set and not self.cognito:
            raise ValueError("registration: the gateway registers clients of the pool 'cognito: true' makes only")
        if self.domain_prefix is not None and not self.cognito:
            raise ValueError("domain_prefix: the hosted sign-in domain of the pool 'cognito: true' makes")
        if self.domain_prefix is not None and (reserved := _reserved_word(self.domain_prefix)):
            raise ValueError(f"domain_prefix: Cognito refuses a prefix containing {reserved!r}")
        return self

    def domain_problems(self, namespace: str) -> list[str]:
        """The default prefix, `asya-<ns>-<account>`, breaks Cognito's rule when the namespace holds a
        word it reserves: the mesh then names its own prefix."""
        reserved = _reserved_word(namespace) if self.cognito and self.domain_prefix is None else None
        if reserved is None:
            return []
        return [
            f"gateway.jwt.domain_prefix: the pool's sign-in domain would be asya-{namespace}-<account>, and "
            f"Cognito refuses a prefix containing {reserved!r}; give a domain_prefix (lowercase letters, "
            "digits, '-', unique in the region)"
        ]


def _reserved_word(prefix: str) -> str | None:
    return next((word for word in COGNITO_RESERVED_WORDS if word in prefix), None)


COGNITO_ADMIN_SCOPE = "admin"  # the pool's resource server scope that makes an admin (`gateway.jwt.cognito`)
COGNITO_ADMINS_GROUP = "admins"  # the pool's group whose users are admins (in `cognito:groups`)


@dataclass(frozen=True)
class UserPoolNames:
    """The Cognito user pool a stack made for sign-in (`gateway.jwt.cognito`), as the gateway is told."""

    issuer: str
    client: str  # the app client's id: users signing in (authorization code flow)
    machine_client: str  # the machine client's id: scripts (client credentials)
    admin_scope: str  # `<resource server>/<scope>`
    domain: str  # the hosted sign-in's base URL: `/oauth2/authorize` and `/oauth2/token` are under it


class AdminsConfig(StrictModel):
    """Who sees every task of the namespace, not only its own (docs/callers.md): a signed-in caller whose
    token grants one of `scopes` (`scope`/`scp`) or one of `roles` (`cognito:groups`, `groups`, `roles`),
    or an AWS principal matching one of `principals` (ARNs, `*` allowed)."""

    scopes: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(default_factory=list)
    roles: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(default_factory=list)
    principals: list[Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:(iam|sts)::", max_length=512)]] = Field(
        default_factory=list
    )


class A2aConfig(StrictModel):
    """The mesh as an A2A agent (docs/a2a.md): what its card at `/.well-known/agent-card.json` tells a
    caller without credentials. `minimal`: how to call the mesh and sign in, no skills; `full`: every
    flow as a skill with its input schema; `off`: no card (404). A caller with credentials gets the full
    card from A2A's authenticated extended card whatever this says."""

    public_card: Literal["full", "minimal", "off"] = "minimal"


class ThrottleConfig(StrictModel):
    """The API stage's throttle, for every route together: `rate` requests a second on average, `burst`
    at once. A caller over it gets API Gateway's 429 before the function runs, so a flood costs no
    invocation and cannot starve the mesh's other functions of the account's concurrency."""

    rate: float = Field(default=100.0, gt=0, le=10_000)  # API Gateway's account limit: 10,000 a second
    burst: int = Field(default=200, ge=1, le=5_000)  # and 5,000 at once


class GatewayConfig(StrictModel):
    """The status gateway: who may call its API (`auth`), which kind of API fronts it (`api`: REST, or
    the cheaper HTTP API), who sees every task (`admins`), how many requests it takes (`throttle`,
    and the API function's `reserved_concurrency`, left unset by default: reserving takes from the
    account's pool, which a new account may not have), how long task records outlive their task,
    how often the deadline backstop looks for overdue tasks, and which browser origins may call it."""

    auth: Literal["iam", "api_key", "jwt"] = "iam"
    api: Literal["rest", "http"] = "rest"
    jwt: JwtConfig | None = None
    admins: AdminsConfig = Field(default_factory=AdminsConfig)
    ownership: Literal["role", "session"] = "role"  # whose tasks an assumed role's session's are (docs/callers.md)
    a2a: A2aConfig = Field(default_factory=A2aConfig)
    throttle: ThrottleConfig = Field(default_factory=ThrottleConfig)
    reserved_concurrency: int | None = Field(default=None, ge=1, le=1_000)
    task_ttl_days: int = Field(default=7, ge=1)
    backstop_minutes: int = Field(default=1, ge=1, le=60)
    tracing: bool = False
    cloudwatch_role: bool = True
    system_log_level: SystemLogLevel = SYSTEM_LOG_LEVEL  # of its three functions (asya_cdk.actor_config)
    # browser origins that may call the API (asya.cors); none: no CORS, as for callers that are not browsers
    cors_origins: list[Annotated[str, Field(pattern=ORIGIN_PATTERN, max_length=256)]] = Field(
        default_factory=list, max_length=20
    )
    # how long an MCP flow tool (and `task_result`) waits for its task before it answers that it runs:
    # shorter for a host whose tool calls time out sooner; API Gateway's 29 s bound it from above
    mcp_wait_seconds: float = Field(default=MCP_WAIT.default, ge=0, le=WAIT_MAX_SECONDS)
    # how FLY events reach followers (docs/status.md, "FLY events"): the mesh's AppSync Events API, within a
    # second and not stored ("channel"); or the live log, a write each and seconds late, replayable ("log")
    fly: Literal["channel", "log"] = "channel"

    @model_validator(mode="after")
    def _auth_fits_api(self) -> GatewayConfig:
        if self.auth == "jwt" and self.jwt is None:
            raise ValueError("jwt: 'auth: jwt' needs a 'jwt' block: the issuer (or 'cognito: true') and audiences")
        if self.auth != "jwt" and self.jwt is not None:
            raise ValueError(f"jwt: set only with 'auth: jwt' (auth is {self.auth!r})")
        if self.api == "http" and self.auth == "api_key":
            raise ValueError(
                "auth: an HTTP API has no API keys or usage plans; with 'api: http' use 'auth: iam' or "
                "'auth: jwt', or keep 'api: rest' for API keys"
            )
        return self

    def auth_document(self, pool: UserPoolNames | None = None) -> dict[str, Any]:
        """`ASYA_GATEWAY_AUTH`: what the gateway function reads of who its callers are, what their
        tasks belong to and what the agent card tells one without credentials
        (`asya_gateway.callers.AuthSettings`). With `cognito: true`, `pool` is the user pool the stack
        made: its issuer is trusted, its two clients are audiences (a Cognito access token names its
        client, not an audience), its resource server's admin scope (the machine client's) and its
        `admins` group (users') make an admin; its hosted sign-in and `registration` let the gateway
        stand as the MCP hosts' authorization server (`asya_gateway.oauth`)."""
        admins = self.admins.model_dump()
        shown = {"ownership": self.ownership, "public_card": self.a2a.public_card}
        if self.jwt is None:
            return {"mode": self.auth, "admins": admins, **shown}
        jwt = self.jwt.model_dump(exclude_none=True, exclude={"domain_prefix", "registration"})
        if self.jwt.cognito and pool is not None:
            jwt |= {"issuer": pool.issuer, "audiences": [pool.client, pool.machine_client, *self.jwt.audiences]}
            jwt |= {"hosted_ui": pool.domain, "registration": self.jwt.registration.model_dump()}
            admins["scopes"] = [*admins["scopes"], pool.admin_scope]
            admins["roles"] = [*admins["roles"], COGNITO_ADMINS_GROUP]
        return {"mode": self.auth, "admins": admins, **shown, "jwt": jwt}

    @property
    def open_well_known(self) -> bool:
        """Whether `GET /.well-known/...` is read without credentials: for the public agent card, and
        with sign-in for where to sign in. With neither, API Gateway refuses it before the function runs."""
        return self.auth == "jwt" or self.a2a.public_card != "off"

    @property
    def registers_clients(self) -> bool:
        """Whether MCP hosts register clients of the mesh's pool at `POST /oauth/register`."""
        return self.jwt is not None and self.jwt.cognito and self.jwt.registration.max_clients > 0

    @property
    def task_ttl_seconds(self) -> int:
        return self.task_ttl_days * 86_400
