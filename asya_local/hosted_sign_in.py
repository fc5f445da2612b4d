"""The Cognito pool's hosted sign-in on the local stack: `/oauth2/authorize` and `/oauth2/token` of the
pool's domain, played by the local issuer (`asya_local.issuer.IssuerServer`) so that an MCP host signs
in end to end here as on AWS: discovery, registration (`asya_gateway.oauth`), the code flow with PKCE.

What the pool would check is checked: the client is one of the pool's (read from the local endpoint's
Cognito at each request, so a client a host registered a moment ago is known), it has the code flow,
the redirect is one of its callback URLs, the scopes are ones it may ask for, the code is used once
within five minutes by the client it was given to, with the same redirect and the verifier of its
challenge. What Cognito's pages ask of a person is not: the authorization is given at once, as
`SIGNED_IN_AS` (there is no password to type here), and that user's token names no group.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from asya_local.issuer import LocalIssuer, SignInError

SIGNED_IN_AS = "local-user"  # who the automatic sign-in is (as `asya token`'s default subject)
CODE_SECONDS = 300.0  # Cognito's authorization codes are good for five minutes
TOKEN_SECONDS = 3600  # ... its access tokens for an hour by default
ClientOf = Callable[[str], dict[str, Any] | None]  # a pool client as DescribeUserPoolClient answers, or None


@dataclass(frozen=True)
class _Grant:
    """What a code (or a refresh token) stands for."""

    client_id: str
    subject: str
    scope: str
    redirect_uri: str = ""
    challenge: str = ""
    expires_at: float = 0.0


@dataclass
class HostedSignIn:
    """The pool's authorize and token endpoints, for `issuer` with the pool's clients (`client_of`)."""

    issuer: LocalIssuer
    client_of: ClientOf
    _codes: dict[str, _Grant] = field(default_factory=dict)
    _refresh: dict[str, _Grant] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def authorize(self, query: dict[str, str]) -> str:
        """Where the browser is sent: the client's redirect with a code (or with the error, once the
        redirect is known to be the client's); `SignInError` when it is not."""
        client = self._client(query.get("client_id", ""))
        redirect = query.get("redirect_uri", "")
        if redirect not in client.get("CallbackURLs", []):
            raise SignInError("invalid_request", "redirect_uri is not one of the client's callback URLs")
        state = {"state": query["state"]} if "state" in query else {}
        try:
            grant = self._grant(client, query, redirect)
        except SignInError as refused:
            return _with(redirect, {"error": refused.error, "error_description": str(refused), **state})
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes[code] = grant
        return _with(redirect, {"code": code, **state})

    def token(self, form: dict[str, str]) -> dict[str, Any]:
        """The token endpoint's answer to an authorization code or a refresh token."""
        kind = form.get("grant_type")
        if kind == "authorization_code":
            with self._lock:
                grant = self._codes.pop(form.get("code", ""), None)  # used once, whatever follows
            if grant is None or grant.expires_at < time.monotonic():
                raise SignInError("invalid_grant", "the code is unknown, used or expired")
            if form.get("client_id") != grant.client_id or form.get("redirect_uri") != grant.redirect_uri:
                raise SignInError("invalid_grant", "the code was given to another client or redirect")
            if grant.challenge and not _verifies(form.get("code_verifier", ""), grant.challenge):
                raise SignInError("invalid_grant", "code_verifier does not match the code_challenge")
            refresh = secrets.token_urlsafe(32)
            with self._lock:
                self._refresh[refresh] = grant
            return {**self._access(grant), "refresh_token": refresh}
        if kind == "refresh_token":
            with self._lock:
                grant = self._refresh.get(form.get("refresh_token", ""))
            if grant is None or form.get("client_id") != grant.client_id:
                raise SignInError("invalid_grant", "the refresh token is unknown or another client's")
            return self._access(grant)
        raise SignInError("unsupported_grant_type", "grant_type: authorization_code or refresh_token")

    def _client(self, client_id: str) -> dict[str, Any]:
        client = self.client_of(client_id) if client_id else None
        if client is None:
            raise SignInError("invalid_client", "client_id is no client of the pool")
        return client

    def _grant(self, client: dict[str, Any], query: dict[str, str], redirect: str) -> _Grant:
        if query.get("response_type") != "code" or "code" not in client.get("AllowedOAuthFlows", []):
            raise SignInError("unsupported_response_type", "the client has the code flow only, response_type=code")
        scopes = (query.get("scope") or " ".join(client.get("AllowedOAuthScopes", []))).split()
        if not set(scopes) <= set(client.get("AllowedOAuthScopes", [])):
            raise SignInError("invalid_scope", "a scope the client may not ask for")
        challenge = query.get("code_challenge", "")
        if challenge and query.get("code_challenge_method") != "S256":
            raise SignInError("invalid_request", "code_challenge_method: S256")
        expires_at = time.monotonic() + CODE_SECONDS
        return _Grant(client["ClientId"], SIGNED_IN_AS, " ".join(scopes), redirect, challenge, expires_at)

    def _access(self, grant: _Grant) -> dict[str, Any]:
        claims = {"client_id": grant.client_id, "scope": grant.scope, "username": grant.subject}
        token = self.issuer.token(subject=grant.subject, expires_in=TOKEN_SECONDS, **claims)
        return {"access_token": token, "token_type": "Bearer", "expires_in": TOKEN_SECONDS, "scope": grant.scope}


def _verifies(verifier: str, challenge: str) -> bool:
    digest = hashlib.sha256(verifier.encode()).digest()
    return hmac.compare_digest(base64.urlsafe_b64encode(digest).rstrip(b"=").decode(), challenge)


def _with(redirect: str, parameters: dict[str, str]) -> str:
    return f"{redirect}{'&' if '?' in redirect else '?'}{urlencode(parameters)}"
