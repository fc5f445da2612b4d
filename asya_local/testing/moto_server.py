"""moto over HTTP for the tests of the local endpoint's patches to moto, which hold in the process that
applies them, and only the endpoint's process applies them (`asya_local.endpoint.patches`):

- `local_endpoint`: the endpoint's process, moto with every patch (IAM off), as the local stack runs it:
  what a patch's proof asks. The tests' session shares one (the `patched_endpoint` fixture, in
  tests/conftest.py); a test empties it (`reset`, `fresh_table`) or names what it makes uniquely;
- `moto_server`: unpatched moto on loopback in the test's own process, to compare a speed patch's
  answers with moto's own (moto's in-process mode does not route some calls, DynamoDB Streams, the
  way a server does).
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.server import ThreadedMotoServer

from asya.variables import LOCAL_IAM, LOCAL_SPEED_PATCHES
from asya_local.endpoint.process import LocalEndpoint, free_port
from asya_local.roles import local_client


@contextmanager
def local_endpoint() -> Iterator[str]:
    """The local endpoint's process (`asya_local.endpoint.process.LocalEndpoint`) with every patch, speed ones
    included whatever the environment says, and IAM off: what these tests prove is moto's behaviour."""
    endpoint = LocalEndpoint(free_port(), env={LOCAL_IAM.name: "off", LOCAL_SPEED_PATCHES.name: "on"})
    endpoint.start()
    try:
        yield endpoint.url
    finally:
        endpoint.stop()


@contextmanager
def moto_server() -> Iterator[str]:
    """The server's URL while it runs. Its state is emptied when it stops: moto keeps state per
    process, and the next test's server would find it."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    url = f"http://127.0.0.1:{server._port}"
    try:
        yield url
    finally:
        reset(url)
        server.stop()


def reset(url: str) -> None:
    """Empty the server's state (every service's)."""
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=10).close()


def create_id_table(dynamodb: Any, name: str, *, stream: bool = False) -> dict[str, Any]:
    """A table keyed by a string `id`, with a stream of both images if asked; its description."""
    extra = {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}} if stream else {}
    described: dict[str, Any] = dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        **extra,
    )["TableDescription"]
    return described


def fresh_table(url: str, name: str) -> Any:
    """A DynamoDB client of the emptied server, holding only table `name` (with a stream): each test
    starts from nothing while the module shares one server."""
    reset(url)
    client = local_client("dynamodb", url)
    create_id_table(client, name, stream=True)
    return client
