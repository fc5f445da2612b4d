"""Sign-in with an OpenID Connect issuer (`gateway.auth: jwt`, docs/callers.md): a request's bearer token
checked by the gateway function itself, since a REST API does not verify a third party's tokens.

A token is accepted when it is signed with one of the issuer's keys (RS256 with an RSA key, ES256 with
an EC key: never `none`, a shared secret, or an algorithm its key is not for), names the issuer (`iss`),
names one of the mesh's audiences (`aud`, or a Cognito access token's `client_id`), is an access token
when the issuer is a Cognito user pool (`token_use: access`: its ID tokens are refused), and is within
its lifetime (`exp`, `nbf`, `LEEWAY_SECONDS` either way). A refusal's message never repeats what the
token says (a key id, a claim): it goes back in a header.

The issuer's keys come from its JWKS, found through `<issuer>/.well-known/openid-configuration`, or
from the URL `ASYA_GATEWAY_JWKS_URL` names (the local stack's issuer only). They are kept for the
execution environment's life (`verifier`: one per issuer), fetched again after `KEYS_SECONDS`, and
once more when a token names a key they lack (a rotation), at most every `REFETCH_COOLDOWN_SECONDS`.

PyJWT does the cryptography. Powertools' `auth_alpha` JWT verifier, built on it, does not fit: it
takes only https key URLs (the local issuer serves plain HTTP on loopback), it requires `aud` (a
Cognito access token has `client_id` instead), and it answers every claim problem with one error, where
a refusal here names its reason (expired, wrong audience, ...).
"""

from __future__ import annotations

import json
import urllib.request
from functools import lru_cache
from typing import Any
from urllib.error import URLError

import jwt

from asya_gateway.issuers import Issuer, SignInRefusedError

ALGORITHMS = ("RS256", "ES256")
KEY_ALGORITHM = {"RSA": "RS256", "EC": "ES256"}  # the one algorithm a token signed with a key of that type uses
LEEWAY_SECONDS = 60  # clocks differ: a token is taken this long before `nbf` and after `exp`
KEYS_SECONDS = 3600.0  # how long the issuer's keys are kept before they are fetched again
REFETCH_COOLDOWN_SECONDS = 10.0  # an unknown key fetches the keys again at most this often
FETCH_TIMEOUT_SECONDS = 3.0


class TokenVerifier:
    """Checks bearer tokens of one issuer; keeps its keys between requests."""

    def __init__(self, issuer: Issuer) -> None:
        self.issuer = issuer
        self._keys: jwt.PyJWKClient | None = None

    def verify(self, authorization: str | None, *, registered: bool = False) -> dict[str, Any]:
        """The token's claims, or `SignInRefusedError` saying why not. `registered`: a token of a client
        MCP hosts registered is taken too (`Issuer.any_client`), where the request is MCP's."""
        token = _bearer(authorization)
        key, algorithm = self._key(token)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                issuer=self.issuer.url,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "sub"], "verify_aud": False},
            )
        except jwt.ExpiredSignatureError:
            raise SignInRefusedError("expired", "the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise SignInRefusedError("not_yet_valid", "the token is not valid yet (nbf)") from None
        except jwt.InvalidIssuerError:
            raise SignInRefusedError("wrong_issuer", f"the token is not from {self.issuer.url}") from None
        except jwt.InvalidSignatureError:
            raise SignInRefusedError("bad_signature", "the token's signature does not verify") from None
        except jwt.MissingRequiredClaimError as exc:
            raise SignInRefusedError("invalid_token", f"the token lacks the {exc.claim!r} claim") from None
        except (jwt.PyJWTError, TypeError, ValueError):  # a hostile token is a 401 whatever PyJWT makes of it
            raise SignInRefusedError("invalid_token", "the token is not accepted") from None
        if not self._audience_matches(claims, registered):
            raise SignInRefusedError("wrong_audience", "the token is not for this API (aud or client_id)")
        if self.issuer.cognito and claims.get("token_use") != "access":
            raise SignInRefusedError("not_an_access_token", "the token is not an access token (token_use)")
        return claims

    def _audience_matches(self, claims: dict[str, Any], registered: bool) -> bool:
        any_client = registered and self.issuer.any_client and self.issuer.cognito
        if any_client and isinstance(claims.get("client_id"), str):
            return True  # a client of the mesh's own pool, a registered one too (`Issuer.any_client`)
        audience = claims.get("aud")
        named = {audience} if isinstance(audience, str) else set(audience or ())
        named.add(claims.get("client_id"))  # a Cognito access token names its app client, not an audience
        return not named.isdisjoint(self.issuer.audiences)

    def _key(self, token: str) -> tuple[Any, str]:
        """The issuer's key the token names (`kid`), fetched again once if the keys kept lack it, and
        the algorithm the token must be signed with: the one of the key's type, whatever the token
        says (an ES256 token under an RSA key's id is refused here, not passed to PyJWT)."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise SignInRefusedError("invalid_token", "the token is not a JWT") from None
        if header.get("alg") not in ALGORITHMS:
            accepted = ", ".join(ALGORITHMS)
            raise SignInRefusedError("invalid_token", f"the token's algorithm is not accepted (only {accepted})")
        try:
            found = self._client().get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            raise SignInRefusedError("keys_unavailable", f"the issuer's keys cannot be fetched: {exc}", 503) from None
        except (jwt.PyJWKClientError, jwt.PyJWKError):
            raise SignInRefusedError("bad_signature", "the token names no key of the issuer (kid)") from None
        algorithm = KEY_ALGORITHM.get(str(found.key_type))
        if algorithm is None or algorithm != header["alg"]:
            raise SignInRefusedError("bad_signature", "the token's algorithm is not its key's")
        return found.key, algorithm

    def _client(self) -> jwt.PyJWKClient:
        if self._keys is None:
            self._keys = jwt.PyJWKClient(
                self.issuer.jwks_url or self._discover(),
                lifespan=KEYS_SECONDS,
                timeout=FETCH_TIMEOUT_SECONDS,
                cooldown_duration=REFETCH_COOLDOWN_SECONDS,
            )
        return self._keys

    def _discover(self) -> str:
        """The issuer's `jwks_uri`, from its OpenID configuration (which must name the same issuer)."""
        where = f"{self.issuer.url.rstrip('/')}/.well-known/openid-configuration"
        try:
            with urllib.request.urlopen(where, timeout=FETCH_TIMEOUT_SECONDS) as response:
                document = json.load(response)
        except (URLError, TimeoutError, ValueError) as exc:
            raise SignInRefusedError("keys_unavailable", f"cannot read {where}: {exc}", 503) from None
        if not isinstance(document, dict) or document.get("issuer") != self.issuer.url:
            raise SignInRefusedError("keys_unavailable", f"{where} names another issuer", 503)
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise SignInRefusedError("keys_unavailable", f"{where} has no jwks_uri", 503)
        return jwks_uri


@lru_cache(maxsize=4)
def verifier(issuer: Issuer) -> TokenVerifier:
    """One verifier (and key cache) per issuer, for the execution environment's life."""
    return TokenVerifier(issuer)


def _bearer(authorization: str | None) -> str:
    if not authorization:
        raise SignInRefusedError("missing_token", "sign in: send Authorization: Bearer <token>")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise SignInRefusedError("missing_token", "the Authorization header is not 'Bearer <token>'")
    return token.strip()
