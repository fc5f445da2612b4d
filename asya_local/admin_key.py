"""The local endpoint's administrator key: a fixed key id and a secret drawn for each endpoint.

The administrator (an IAM user allowed everything) deploys stacks and drives the tools and tests. Its
key id stays `asya-local`, so its requests are easy to tell in a log, but its secret is random, and
the endpoint verifies the administrator's signatures (`asya_local.endpoint.admin_signature`), so
naming the key is no longer enough. (Outside `asya_local.endpoint`, which imports moto: the local
gateway's worker, which has no moto, needs it too.) Who knows the secret: the process that started the endpoint
(`LocalEndpoint` remembers it here), the endpoint's own process and what it starts (the
`ASYA_LOCAL_ADMIN_SECRET` variable it is started with, which the local gateway's worker gets too, to
ask the endpoint who holds a key), and whoever reads the running stack's state
file, which only its owner may (`asya_local.local_state` remembers it here). The endpoint's own calls
under `/asya-local/` ask for the secret too, in the `X-Asya-Local-Admin` header.
"""

from __future__ import annotations

import os
import secrets

KEY_ID = "asya-local"
SECRET_VARIABLE = "ASYA_LOCAL_ADMIN_SECRET"
HEADER = "X-Asya-Local-Admin"
_known: dict[str, dict[str, str]] = {}  # endpoint URL -> its administrator's credential variables


def new_credentials() -> dict[str, str]:
    """A fresh administrator key, as the credential variables a client signs with."""
    return {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": secrets.token_urlsafe(32)}


def remember(endpoint: str, credentials: dict[str, str]) -> None:
    _known[endpoint] = credentials


def credentials(endpoint: str) -> dict[str, str]:
    """The administrator's key of the endpoint at `endpoint`, as far as this process knows it. An
    endpoint it does not know (a test's moto server enforcing no IAM) takes any secret."""
    if endpoint in _known:
        return _known[endpoint]
    return {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": os.environ.get(SECRET_VARIABLE, "unknown")}


def headers(endpoint: str) -> dict[str, str]:
    """The header the endpoint's own calls (`/asya-local/`) need."""
    return {HEADER: credentials(endpoint)["AWS_SECRET_ACCESS_KEY"]}
