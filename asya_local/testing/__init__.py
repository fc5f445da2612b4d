"""Testing a mesh: what a project's tests use (docs/testing.md), and what the mesh's own tests and
benches use to run a mesh and judge it.

The public part, importable from here:

- `MeshHarness`: a mesh file run in one process, the gateway, the sidecars and the crew as deployed,
  on moto's in-memory AWS; `FlowRun`, what one task did there; `HarnessError`; `TaskError`, a task
  the gateway refuses to create (its HTTP `status` and why);
- the pytest plugin (`pytest_plugin`, registered by the package): `asya_mesh`, `asya_stack`.

The rest serves the mesh's own tests and benches:

- `inprocess`: the engine under the harness, a mesh of handler strings with no mesh file;
- `tables`: the mesh's tables as the CDK app defines them;
- `moto_server`: the local endpoint's process with its patches, and unpatched moto, on loopback;
- `metering`: what AWS would bill a run, request by request;
- `chaos`: a mesh under every fault the local stack injects, its envelopes counted.

The events Lambda hands a function (an SQS batch, a context) are built by
`asya_local.functions.lambda_shapes`, which the local stack's stand-ins use too. The names are loaded
on first use: the pytest plugin imports this package in every session of the virtualenv.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asya_local.testing.flow_run import FlowRun
    from asya_local.testing.harness import HarnessError, MeshHarness, TaskError

__all__ = ["FlowRun", "HarnessError", "MeshHarness", "TaskError"]
_HOMES = {"FlowRun": "flow_run", "HarnessError": "harness", "MeshHarness": "harness", "TaskError": "harness"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
