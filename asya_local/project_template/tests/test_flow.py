"""The flow as the mesh runs it, in this process: the gateway creates the task, each actor's sidecar
runs its handler, the crew ends the task. No endpoint and no AWS account; well under a second a test.

`asya_mesh` is the asya-aws pytest plugin's fixture: `mesh.yaml` run in memory, fresh for each test.
"""

from __future__ import annotations

import pytest

from asya_local.testing import MeshHarness, TaskError


def test_a_text_goes_through_the_flow_and_ends_counted(asya_mesh: MeshHarness) -> None:
    run = asya_mesh.run("count-words", {"text": "Hello, hello world"})
    assert run.succeeded
    assert run.output["counts"] == {"hello": 2, "world": 1}
    assert run.actors == ["normalize", "count"]


def test_a_text_without_words_fails_with_the_handlers_error(asya_mesh: MeshHarness) -> None:
    run = asya_mesh.run("count-words", {"text": "42"})
    assert run.status == "failed"
    assert run.error["type"] == "ValueError"
    assert "no words" in run.error["message"]
    assert run.actors == ["normalize"]  # count never saw it


def test_the_flow_refuses_an_input_without_text(asya_mesh: MeshHarness) -> None:
    with pytest.raises(TaskError, match="input schema") as refused:
        asya_mesh.run("count-words", {"words": ["hello"]})
    assert refused.value.status == 400  # what the API answers
