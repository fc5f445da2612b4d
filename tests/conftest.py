"""What every test shares: the local endpoint's process, for the tests that prove its patches of moto."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.moto_server import local_endpoint


@pytest.fixture(scope="session")
def patched_endpoint() -> Iterator[str]:
    """The URL of the local endpoint's process, moto with every patch (`tests.support.moto_server`),
    started once a session: a few seconds."""
    with local_endpoint() as url:
        yield url
