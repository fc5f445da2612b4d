"""What sign-in (`gateway.auth: jwt`, docs/callers.md) is made of, apart from the verification itself
(`asya_gateway.signin`): the issuer a token must come from, and the refusal of a request that does not
sign in. Apart so that what every request reads (`asya_gateway.callers`, the API's answers) does not
import PyJWT and its cryptography: a mesh without sign-in never loads them."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit


class SignInRefusedError(Exception):
    """A request the gateway refuses (401, or 503 when the issuer's keys cannot be had): `reason` is a
    stable word (`missing_token`, `expired`, `wrong_audience`, ...) and the message says more."""

    def __init__(self, reason: str, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status


@dataclass(frozen=True)
class Issuer:
    """What a token must carry: this issuer, one of these audiences; `jwks_url` skips discovery.
    `any_client`: a Cognito access token of any of the pool's app clients is taken, for the pool the
    stack makes and registers MCP hosts' clients of (`asya_gateway.oauth`): every client of that pool
    is the mesh's, and a registered one's id is known only once a host has registered."""

    url: str
    audiences: tuple[str, ...]
    jwks_url: str | None = None
    any_client: bool = False

    @property
    def cognito(self) -> bool:
        """A Cognito user pool (`https://cognito-idp.<region>.amazonaws.com/<pool>`), made by the mesh or
        not: its ID tokens are signed with the same keys as its access tokens, and an ID token's `aud`
        is the app client, an audience; only `token_use` tells them apart."""
        return (urlsplit(self.url).hostname or "").startswith("cognito-idp.")
