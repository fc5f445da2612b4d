"""The flow through the real sidecar code, in one process: no endpoint, no AWS, about a second."""

from __future__ import annotations

import pytest

from asya_local.testing.inprocess import InProcessMesh

HANDLERS = {"normalize": "text.normalize", "count": "text.count_words"}


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sidecars' AWS clients need a region, as on Lambda; the queues are moto's, in memory."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def test_a_text_goes_through_the_flow_and_ends_counted() -> None:
    with InProcessMesh("test", HANDLERS) as mesh:
        mesh.send(["normalize", "count"], {"text": "Hello, hello world"})
        mesh.run_until_idle()
        [ended] = mesh.drain("x-sink")
        assert mesh.drain("x-sump") == []
    assert ended["payload"]["counts"] == {"hello": 2, "world": 1}
    assert ended["route"]["prev"] == ["normalize", "count"]


def test_a_text_without_words_fails_and_is_kept_with_its_reason() -> None:
    with InProcessMesh("test", HANDLERS) as mesh:
        mesh.send(["normalize", "count"], {"text": "42"})
        mesh.run_until_idle()
        [failed] = mesh.drain("x-sink")
    assert failed["status"]["phase"] == "failed"
    assert "no words" in str(failed["status"])
