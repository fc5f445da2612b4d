"""What every test shares: the local endpoint's process, for the tests that prove its patches of moto,
and the check that no test patches moto in the tests' own process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asya_local.endpoint.patches import applied_in_this_process
from asya_local.testing.moto_server import local_endpoint

_reported: set[str] = set()  # the patches a test has been failed for already


@pytest.fixture(scope="session")
def patched_endpoint() -> Iterator[str]:
    """The URL of the local endpoint's process, moto with every patch (`asya_local.testing.moto_server`),
    started once a session: a few seconds."""
    with local_endpoint() as url:
        yield url


@pytest.fixture(autouse=True)
def _moto_unpatched_here() -> Iterator[None]:
    """Fails the test after which moto is found patched in this process (`asya_local.endpoint.patches`),
    once per patch: a patch holds until the process ends, so every later test would run on patched
    moto and depend on which ran before it."""
    yield
    found = {patch.function for patch in applied_in_this_process()} - _reported
    if found:
        _reported.update(found)
        pytest.fail(
            f"moto was patched in the tests' process ({', '.join(sorted(found))}): prove a patch through "
            "the local endpoint's process (`patched_endpoint`) or a child Python (`tests.support.patched_moto`)"
        )
