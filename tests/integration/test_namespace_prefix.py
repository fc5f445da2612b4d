"""A second mesh whose namespace starts with a deployed mesh's (`itest-prod` beside `itest`) would sit
under the first's `asya-itest-*` grants: `asya check --account`, run against the session's endpoint
where `itest` is deployed, refuses it naming the other mesh, and passes a namespace of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from asya_cdk.loading import load_mesh
from asya_local.account import account_findings
from tests.support.stack import RunningMesh

pytestmark = pytest.mark.integration


def _findings(running_mesh: RunningMesh, tmp_path: Path, namespace: str) -> list[str]:
    (tmp_path / "actors.py").write_text("def echo(p):\n    return p\n")
    mesh = tmp_path / f"{namespace}.yaml"
    mesh.write_text(f"namespace: {namespace}\nactors:\n  echo: {{handler: actors.echo}}\n")
    stack = running_mesh.stack
    findings = account_findings(load_mesh(mesh), stack.client("lambda"), stack.client("sqs"))
    assert not findings.warnings, "the deployed namespaces were read"  # (moto has no Lambda account settings)
    return findings.problems


def test_a_namespace_under_a_deployed_meshs_prefix_is_refused(running_mesh: RunningMesh, tmp_path: Path) -> None:
    [problem] = _findings(running_mesh, tmp_path, f"{running_mesh.stack.namespace}-prod")
    assert "the deployed mesh 'itest' is a prefix of 'itest-prod'" in problem
    assert _findings(running_mesh, tmp_path, "itestprod") == []  # no `-`: asya-itest-* does not cover it
