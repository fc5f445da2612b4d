"""Integration tests run the local stack: moto server on a free loopback port, the CDK template
deployed into it, one worker process per event source mapping (and the gateway's server, stream
poller and schedule), and boto3 over real HTTP.

moto's state is per process, so the session has one endpoint (`endpoint`) and every stack a test
module deploys goes into it under its own names, rather than resetting another module's. The tests
of the endpoint's patches of moto alone (SQS's, here) share another, with IAM off (`patched_endpoint`,
tests/conftest.py)."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from asya_local.endpoint.process import LocalEndpoint, free_port
from tests.support.stack import MESH, RunningMesh, running

# `make test` runs these tests as a background job of a shell without job control, which starts them
# with SIGINT ignored, and Python then takes no Ctrl-C: a developer's Ctrl-C of `make test` would leave
# them running, and a command they start in a terminal of its own would inherit the signal ignored
# (`test_terminal_stop`). Ctrl-C ends them as it ends any command, and their stacks with them.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def endpoint() -> Iterator[LocalEndpoint]:
    with LocalEndpoint(free_port()) as started:
        yield started


@pytest.fixture(scope="session")
def running_mesh(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, MESH) as mesh:
        yield mesh
