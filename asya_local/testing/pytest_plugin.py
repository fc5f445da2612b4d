"""The pytest plugin the package registers (`pytest11` entry point `asya`): fixtures for a project's
tests of its mesh, found by pytest in any virtualenv with asya-aws installed.

- `asya_mesh`: the project's mesh file run in this process (`MeshHarness`), fresh for each test;
- `asya_stack`: the local stack running the mesh file (`RunningStack`), started once per session for
  the tests that need what only it has (each function with only what it ships, the gateway's HTTP API);
- `asya_mesh_file` and `asya_secrets`: what the two are made from, for a test module to override.

The mesh file is `--asya-mesh FILE`, or the `asya_mesh` ini option, or `mesh.yaml` in pytest's root
folder. This module imports nothing of the mesh at its top: pytest loads it in every session of the
virtualenv, and a session that uses none of its fixtures should not pay for them (or need the
`local` extra).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from asya_local.gateway_client import GatewayClient
    from asya_local.stack import LocalStack
    from asya_local.testing.harness import MeshHarness

MESH_FILE = "mesh.yaml"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("asya", "asya-aws mesh tests")
    group.addoption("--asya-mesh", metavar="FILE", help=f"the mesh file the asya fixtures run (default: {MESH_FILE})")
    parser.addini("asya_mesh", f"the mesh file the asya fixtures run, from the root folder (default: {MESH_FILE})")


@pytest.fixture(scope="session")
def asya_mesh_file(pytestconfig: pytest.Config) -> Path:
    """The mesh file the fixtures run: `--asya-mesh`, the `asya_mesh` ini option, or `mesh.yaml`."""
    given = pytestconfig.getoption("asya_mesh") or pytestconfig.getini("asya_mesh") or MESH_FILE
    path = Path(given)
    return path if path.is_absolute() else pytestconfig.rootpath / path


@pytest.fixture(scope="session")
def asya_secrets() -> dict[str, str]:
    """Each secret's value for the in-process mesh, by the name the mesh file gives it; override it in
    a conftest.py when an actor reads secrets."""
    return {}


@pytest.fixture
def asya_mesh(asya_mesh_file: Path, asya_secrets: dict[str, str]) -> Iterator[MeshHarness]:
    """The mesh file in this process, with empty queues and tables: `asya_mesh.run(flow, payload)`."""
    from asya_local.testing.harness import MeshHarness

    with MeshHarness(asya_mesh_file, secrets=asya_secrets) as mesh:
        yield mesh


@dataclass
class RunningStack:
    """The local stack under test: `run` a task through its gateway's HTTP API; `worker_lines` is what
    its functions printed (tracebacks included), for a failure's message; `stack` the rest."""

    stack: LocalStack
    worker_lines: list[str] = field(default_factory=list)

    @property
    def gateway(self) -> GatewayClient:
        return self.stack.gateway_client()

    def run(self, flow: str, payload: Any, seconds: float = 60.0) -> dict[str, Any]:
        """Create a task of the flow and wait for its end: the task as `GET /mesh/{id}` answers it,
        the result as `output` (`terminal` false if it had not ended in `seconds`)."""
        return self.gateway.run_task({"flow": flow, "payload": payload}, seconds)

    def keep(self, source: str, line: str) -> None:
        self.worker_lines.append(f"{source}: {line}")


@pytest.fixture(scope="session")
def asya_stack(asya_mesh_file: Path) -> Iterator[RunningStack]:
    """The local stack running the mesh file, as `asya up` runs it, for the whole session."""
    from asya_cdk.loading import load_mesh
    from asya_local.endpoint.process import free_port
    from asya_local.stack import LocalStack

    stack = LocalStack(load_mesh(asya_mesh_file), port=free_port())
    running = RunningStack(stack)
    stack.on_line = running.keep
    with stack:
        yield running
