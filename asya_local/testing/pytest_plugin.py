"""The pytest plugin the package registers (`pytest11` entry point `asya`): fixtures for a project's
tests of its mesh, found by pytest in any virtualenv with asya-aws installed.

- `asya_mesh`: the project's mesh file run in this process (`MeshHarness`), fresh for each test;
- `asya_stack`: the local stack running the mesh file (`RunningStack`), for the tests that need what
  only it has (each function with only what it ships, the gateway's HTTP API): an `asya up` of the
  mesh file already running in its folder, or one started once for the session;
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
    """The local stack under test: `run` a task through its gateway's HTTP API (`gateway`, the API's
    client); `worker_lines` is what its functions printed, tracebacks included, for a failure's
    message. `stack` is the stack the fixture started, None when it found an `asya up` running."""

    gateway: GatewayClient
    stack: LocalStack | None = None
    log_file: Path | None = None  # the running `asya up`'s worker log
    printed: list[str] = field(default_factory=list)  # what the functions of the fixture's stack printed

    @property
    def worker_lines(self) -> list[str]:
        if self.log_file is not None and self.log_file.is_file():
            return self.log_file.read_text(errors="replace").splitlines()
        return list(self.printed)

    def run(self, flow: str, payload: Any, seconds: float = 60.0) -> dict[str, Any]:
        """Create a task of the flow and wait for its end: the task as `GET /mesh/{id}` answers it,
        the result as `output` (`terminal` false if it had not ended in `seconds`)."""
        return self.gateway.run_task({"flow": flow, "payload": payload}, seconds)


@pytest.fixture(scope="session")
def asya_stack(asya_mesh_file: Path) -> Iterator[RunningStack]:
    """The local stack running the mesh file, for the whole session: an `asya up` of the same mesh
    file already running in its folder (so a developer's tests reuse the stack they have up), or else
    one started here as `asya up` starts it, and stopped at the session's end."""
    from asya_local.local_state import gateway_of, running_for

    found = running_for(asya_mesh_file)
    if found is not None:
        file, state = found
        log = Path(state["log"]) if state.get("log") else None
        yield RunningStack(gateway_of(state), log_file=file.parent.parent / log if log else None)
        return
    from asya_cdk.loading import load_mesh
    from asya_local.endpoint.process import free_port
    from asya_local.stack import LocalStack

    printed: list[str] = []
    stack = LocalStack(
        load_mesh(asya_mesh_file), port=free_port(), on_line=lambda *line: printed.append(": ".join(line))
    )
    with stack:
        yield RunningStack(stack.gateway_client(), stack, printed=printed)
