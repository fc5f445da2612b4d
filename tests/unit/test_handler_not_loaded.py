"""An actor whose handler cannot be loaded (a typo in its name, a module it cannot import) starts, says
so at ERROR, and fails each envelope with the load error, naming the actor: its task ends failed with
that reason at once instead of waiting in its queue for SQS to give up on it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from asya_local.testing import MeshHarness
from tests.support.mesh import Mesh, envelope

MESH = """\
namespace: typo
actors:
  split: {handler: actors.splitt, code: .}
  score: {handler: actors.score, code: .}
flows:
  reviews: {route: [split, score]}
"""
ACTORS = """\
def split(payload):
    return payload


def score(payload):
    return payload
"""


def test_the_sidecar_starts_says_why_at_error_and_fails_each_envelope_with_the_load_error(
    mesh: Mesh, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        mesh.actor("enrch")
    [said] = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert said.getMessage().startswith(
        "a cannot load its handler: module 'tests.support.handlers' has no attribute 'enrch' (did you mean 'enrich'?)"
    )
    mesh.deliver(envelope(payload={"x": 1}))
    failed = mesh.only("x-sink")
    assert failed["status"]["phase"] == "failed"
    assert failed["status"]["error"]["type"] == "HandlerConfigError"
    assert failed["status"]["error"]["message"] == (
        "a cannot load its handler: module 'tests.support.handlers' has no attribute 'enrch' "
        "(did you mean 'enrich'?) (ASYA_HANDLER='tests.support.handlers.enrch')"
    )
    mesh.assert_empty("a", "b")


def test_a_task_behind_a_mistyped_handler_ends_failed_with_the_load_error(tmp_path: Path) -> None:
    (tmp_path / "mesh.yaml").write_text(MESH)
    (tmp_path / "actors.py").write_text(ACTORS)
    with MeshHarness(tmp_path / "mesh.yaml") as harness:
        run = harness.run("reviews", {"reviews": []})
    assert run.status == "failed"
    assert run.task["actor"] == "split"
    assert run.task["error"]["message"].startswith(
        "split cannot load its handler: module 'actors' has no attribute 'splitt' (did you mean 'split'?)"
    )
    at_split = [delivery.retried for delivery in run.deliveries if delivery.actor == "split"]
    assert at_split == [False], "delivered once, not again and again until SQS gives up on it"
