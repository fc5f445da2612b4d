"""Make moto's Cognito refuse the app clients Cognito refuses: `apply_client_rules()` patches moto 5.2.5.

The gateway makes an app client of the mesh's pool for each MCP host that registers
(`asya_gateway.oauth`), named and sent back where the host asked. Cognito checks what moto 5.2.5 takes
without a word, so a registration that passes locally could fail on AWS:

- `ClientName`: 1 to 128 characters of `[\\w\\s+=,.@-]`, matched as Java matches it, ASCII letters and
  digits only (`Café` is refused);
- `CallbackURLs`: absolute, without a fragment, and over https, but for plain http on loopback
  (`localhost`, and the loopback literals `127.0.0.1` and `[::1]` that Cognito takes since 2025); an
  app's own scheme (`myapp://cb`) is taken, as Cognito takes it.

Each is answered with Cognito's `InvalidParameterException`, and no client is made.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from moto.cognitoidp.exceptions import InvalidParameterException
from moto.cognitoidp.models import CognitoIdpBackend

CLIENT_NAME = re.compile(r"[\w\s+=,.@-]{1,128}", re.ASCII)
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_ORIGINAL_CREATE = CognitoIdpBackend.create_user_pool_client
_ORIGINAL_UPDATE = CognitoIdpBackend.update_user_pool_client


def refusal(config: dict[str, Any]) -> str | None:
    """Why Cognito refuses an app client of these settings (CreateUserPoolClient's), or None."""
    name = config.get("ClientName")
    if name is not None and not CLIENT_NAME.fullmatch(str(name)):
        return (
            f"1 validation error detected: Value '{name}' at 'clientName' failed to satisfy constraint: "
            r"Member must satisfy regular expression pattern: [\w\s+=,.@-]+"
        )
    for url in config.get("CallbackURLs") or ():
        try:
            parts = urlsplit(str(url))
            host = (parts.hostname or "").lower()
        except ValueError:
            return f"{url} is not a valid callback URL"
        if not parts.scheme or parts.fragment:
            return f"{url}: a callback URL is absolute and has no fragment"
        if parts.scheme == "http" and host not in LOOPBACK:
            return f"{url}: a callback URL uses https, except http on localhost"
    return None


def _create(self: CognitoIdpBackend, user_pool_id: str, generate_secret: bool, extended_config: dict[str, Any]) -> Any:
    problem = refusal(extended_config)
    if problem is not None:
        raise InvalidParameterException(problem)
    return _ORIGINAL_CREATE(self, user_pool_id, generate_secret, extended_config)


def _update(self: CognitoIdpBackend, user_pool_id: str, client_id: str, extended_config: dict[str, Any]) -> Any:
    problem = refusal(extended_config)
    if problem is not None:
        raise InvalidParameterException(problem)
    return _ORIGINAL_UPDATE(self, user_pool_id, client_id, extended_config)


def apply_client_rules() -> None:
    CognitoIdpBackend.create_user_pool_client = _create  # type: ignore[method-assign]
    CognitoIdpBackend.update_user_pool_client = _update  # type: ignore[method-assign]
