"""`asya deploy` before the CDK CLI runs: the account check of `asya check --account` (unless
`--no-account`), refusing what would roll the stack back; the Docker check of `package: image`
actors, which names the containerd image store; and the CDK CLI run with BuildKit's default
attestations off, so an image reaches Lambda as a single manifest."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from rich.console import Console

from asya_cdk.loading import load_mesh
from asya_cdk.packaging import docker_problem
from asya_local import cdk_cli, cdk_toolkit
from asya_local.cli import parser
from tests.support.lambda_account import Account, NoCredentials

CONTAINERD = '[["driver-type","io.containerd.snapshotter.v1"]]\n'
CLASSIC = '[["Backing Filesystem","extfs"],["Supports d_type","true"],["Using metacopy","false"]]\n'


class NoQueues:
    """SQS with no mesh deployed: nothing shares the namespace."""

    def get_paginator(self, operation: str) -> Any:
        assert operation == "list_queues"
        return self

    def paginate(self, **_: Any) -> list[dict[str, Any]]:
        return [{}]


def _mesh_file(folder: Path, namespace: str, actor: str) -> Path:
    """A mesh of one actor, `actor` its name and settings in YAML's flow style, beside its handler."""
    (folder / "mod.py").write_text("def fn(p):\n    return p\n")
    path = folder / "mesh.yaml"
    path.write_text(f"namespace: {namespace}\nactors:\n  {actor}\n")
    return path


@pytest.fixture
def mesh(tmp_path: Path) -> Path:
    return _mesh_file(tmp_path, "dep", "a: {handler: mod.fn, reserved_concurrency: 50}")


@pytest.fixture
def cdk_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The CDK CLI's runs, recorded instead of made."""
    runs: list[list[str]] = []

    def run_cdk(_cli: Path, arguments: list[str], _cwd: Path) -> int:
        runs.append(arguments)
        return 0

    monkeypatch.setattr(cdk_cli, "cdk_cli", lambda **_: Path("cdk"))
    monkeypatch.setattr(cdk_cli, "run_cdk", run_cdk)
    return runs


def _deploy(monkeypatch: pytest.MonkeyPatch, account: Any, *argv: str) -> tuple[int, str]:
    clients = {"lambda": account, "sqs": NoQueues()}
    monkeypatch.setattr(boto3, "client", lambda service, **_: clients[service])
    console = Console(record=True, width=400)
    code = cdk_cli.run(parser().parse_args(["deploy", *argv]), console)
    return code, console.export_text()


def test_deploy_stops_before_the_cdk_when_the_account_cannot_grant_the_mesh(
    mesh: Path, cdk_runs: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, said = _deploy(monkeypatch, Account(limit=120, unreserved=120), "--config", str(mesh))
    assert code == 1
    assert "the mesh reserves 50 concurrent executions (actors.a.reserved_concurrency 50)" in said
    assert cdk_runs == [], "CloudFormation never saw the mesh"


def test_deploy_stops_before_the_cdk_when_an_actor_switches_its_package_type(
    mesh: Path, cdk_runs: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    account = Account(limit=1000, unreserved=1000, package_types={"asya-dep-a": "Image"})
    code, said = _deploy(monkeypatch, account, "--config", str(mesh))
    assert code == 1
    assert "actors.a.package is zip, but its function asya-dep-a is deployed with package type Image" in said
    assert cdk_runs == []


def test_deploy_with_no_account_checks_the_mesh_alone(
    mesh: Path, cdk_runs: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _ = _deploy(monkeypatch, Account(limit=120, unreserved=120), "--config", str(mesh), "--no-account")
    assert code == 0
    [arguments] = cdk_runs
    assert arguments[0] == "deploy"


def test_deploy_without_credentials_says_what_it_skipped_and_deploys(
    mesh: Path, cdk_runs: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, said = _deploy(monkeypatch, NoCredentials(0, 0), "--config", str(mesh))
    assert code == 0
    assert "the account's Lambda concurrency was not checked (NoCredentialsError" in said
    assert len(cdk_runs) == 1


def test_the_cdk_cli_runs_with_buildkits_default_attestations_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setenv("BUILDX_NO_DEFAULT_ATTESTATIONS", "0")
    monkeypatch.setattr(subprocess, "call", lambda _command, **kwargs: seen.update(kwargs) or 0)
    assert cdk_toolkit.run_cdk(Path("cdk"), ["deploy"], tmp_path) == 0
    assert seen["env"]["BUILDX_NO_DEFAULT_ATTESTATIONS"] == "1"


@pytest.fixture
def image_mesh(tmp_path: Path) -> Path:
    return _mesh_file(tmp_path, "img", "report: {handler: mod.fn, package: image}")


def _docker(monkeypatch: pytest.MonkeyPatch, returncode: int, stdout: str, stderr: str = "") -> None:
    """A `docker` command whose `docker info` answers so, as the Docker check sees it (only there: the
    libraries' installs keep the real `subprocess`)."""

    def info(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        assert command[1] == "info"
        return subprocess.CompletedProcess(command, returncode, stdout, stderr)

    monkeypatch.setattr("asya_cdk.packaging.shutil", SimpleNamespace(which=lambda _name: "/usr/bin/docker"))
    monkeypatch.setattr("asya_cdk.packaging.subprocess", SimpleNamespace(run=info))


def test_the_containerd_image_store_without_attestations_off_is_named_with_what_to_set(
    image_mesh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _docker(monkeypatch, 0, CONTAINERD)
    problem = docker_problem(load_mesh(image_mesh), {})
    assert problem is not None
    assert problem.startswith("actors.report: this Docker keeps images in the containerd image store")
    assert "Lambda refuses a function on an index" in problem
    assert "BUILDX_NO_DEFAULT_ATTESTATIONS=1" in problem


@pytest.mark.parametrize(
    ("info", "environ"),
    [(CONTAINERD, {"BUILDX_NO_DEFAULT_ATTESTATIONS": "1"}), (CLASSIC, {}), ("null\n", {})],
)
def test_a_docker_that_pushes_single_manifests_is_no_problem(
    image_mesh: Path, monkeypatch: pytest.MonkeyPatch, info: str, environ: dict[str, str]
) -> None:
    _docker(monkeypatch, 0, info)
    assert docker_problem(load_mesh(image_mesh), environ) is None


def test_an_engine_that_does_not_answer_is_named(image_mesh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _docker(monkeypatch, 1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.")
    problem = docker_problem(load_mesh(image_mesh), {})
    assert problem is not None
    assert "its engine does not answer (Cannot connect to the Docker daemon" in problem


def test_deploy_builds_on_the_containerd_store_with_attestations_off(
    image_mesh: Path, cdk_runs: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `asya deploy` the containerd store is no problem: the CDK CLI runs with the variable set,
    and the command line shown says so."""
    _docker(monkeypatch, 0, CONTAINERD)
    code, said = _deploy(monkeypatch, Account(limit=1000, unreserved=1000), "--config", str(image_mesh))
    assert (code, len(cdk_runs)) == (0, 1)
    assert "BUILDX_NO_DEFAULT_ATTESTATIONS=1 cdk deploy" in said
