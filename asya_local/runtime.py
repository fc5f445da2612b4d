"""A local execution environment's Python: what the function would import on Lambda, and nothing else.

Lambda's Python runtime puts three things on a function's path, in this order: its code (`/var/task`,
with the libraries bundled into it), its layers (`/opt/python`: here the sidecar's `asya` and the
layer's libraries) and the runtime itself (`/var/runtime`: the AWS SDK for Python, and the runtime
interface that calls the handler). A local worker gets the same, in the same order, built for this
machine's interpreter: the function's folder and its own libraries (an actor's declared ones, the
gateway's extra), the sidecar's `asya` and the layer's libraries, `RUNTIME_SDK` and the local stand-ins
(`asya_local`, which play the runtime interface). Its interpreter starts without site-packages
(`python -S`), so the project's virtualenv is out of reach: an import the function does not ship
fails here as it fails on Lambda.

Each set of libraries is installed once and kept (`asya_cdk.libraries`, the installer that bundles
them for AWS), and compiled once (`asya_local.bytecode`), so a warm start costs a few hash checks. The
interpreter is this machine's (Python 3.11 or newer), not the runtime's 3.14, and wheels are this
machine's platform's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from asya.names import GATEWAY_FUNCTIONS, resource_name
from asya_cdk.layer import gateway_build, layer_build
from asya_cdk.libraries import Build, Installed, Requirements, Target, install, installed
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.packaging import actor_build
from asya_cdk.sources import shipped
from asya_local.bytecode import compiled

# The AWS SDK the local runtime provides, as Lambda's Python runtime provides its own. AWS updates the
# runtime's copy from time to time; an actor that needs a given SDK declares boto3 in its libraries.
RUNTIME_SDK = ("boto3==1.44.5", "botocore==1.44.5")
# What a worker's process environment keeps of the stack's own: nothing that points Python elsewhere.
DROPPED_VARIABLES = frozenset(
    {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONSAFEPATH", "VIRTUAL_ENV", "CONDA_PREFIX"}
)


def runtime_sdk_build(target: Target) -> Build:
    return Build(Requirements(RUNTIME_SDK, source="the local runtime's AWS SDK"), target)


def runtime_interface() -> Path:
    """A folder holding only `asya_local`, so the workers' own modules are importable and nothing else
    of the installation is (`asya_cdk`, the user's other libraries, a checkout's `examples`)."""
    return shipped("asya_local")


@dataclass(frozen=True)
class FunctionPython:
    """A function's import path (`sys.path` order: its code first, the runtime last)."""

    path: tuple[Path, ...]

    def environment(self, inherited: dict[str, str]) -> dict[str, str]:
        """A worker's process environment: the stack's, less what would point Python elsewhere, with
        the path as `PYTHONPATH` (what `python -S` still reads)."""
        kept = {key: value for key, value in inherited.items() if key not in DROPPED_VARIABLES}
        return {**kept, "PYTHONPATH": os.pathsep.join(str(entry) for entry in self.path)}


class LocalPythons:
    """Every function's import path for one mesh, its libraries installed once per distinct set."""

    def __init__(self, mesh: LoadedMesh, target: Target | None = None) -> None:
        self.mesh = mesh
        self.target = target or Target.this_machine()
        self.layer = install(layer_build(self.target))
        self.sdk = install(runtime_sdk_build(self.target))
        self.runtime = _runtime_path(self.layer, self.sdk)
        namespace = mesh.config.namespace
        self.own: dict[str, Path] = {}
        gateway = install(gateway_build(self.target)).path
        for function in GATEWAY_FUNCTIONS:
            self.own[resource_name(namespace, function)] = gateway
        for name, actor in mesh.config.actors.items():
            # a Lambda actor's libraries, or a container actor's (its image's): the worker's import path
            build = actor_build(mesh, name, self.target, self.layer) if actor.runtime != "spark" else None
            if build is not None:
                self.own[resource_name(namespace, name)] = install(build).path
        compiled([*self.runtime, *self.own.values()])

    def spark_jobs(self) -> dict[str, list[Path]]:
        """Each Spark actor's declared libraries, built for this machine, by its application's name: the
        local Spark runner puts them on its job's path (the job's interpreter is still the project's, see
        docs/local-stack.md)."""
        jobs = {}
        for name, actor in self.mesh.config.actors.items():
            build = actor_build(self.mesh, name, self.target, self.layer) if actor.runtime == "spark" else None
            if build is not None:
                jobs[resource_name(self.mesh.config.namespace, name)] = [install(build).path]
        return jobs

    def of(self, function: str, code: Path) -> FunctionPython:
        """The import path of the deployed function `function`, whose code is the folder `code`."""
        own = [self.own[function]] if function in self.own else []
        return FunctionPython((code, *own, *self.runtime))


NOT_BUILT = "not built for this machine yet (`asya up` builds them once)"


def built_actor_pythons(mesh: LoadedMesh, target: Target | None = None) -> dict[str, FunctionPython | str]:
    """Each Lambda actor's import path as `LocalPythons.of` gives its worker, from libraries already
    built only (nothing is installed, so this costs a few hash checks); an actor whose libraries are
    not built yet maps to why it has no path."""
    target = target or Target.this_machine()
    actors = [name for name, actor in mesh.config.actors.items() if actor.runtime == "lambda"]
    layer, sdk = installed(layer_build(target)), installed(runtime_sdk_build(target))
    if layer is None or sdk is None:
        return dict.fromkeys(actors, f"the sidecar's libraries are {NOT_BUILT}")
    runtime = _runtime_path(layer, sdk)
    found: dict[str, FunctionPython | str] = {}
    for name in actors:
        build = actor_build(mesh, name, target, layer)
        own = installed(build) if build is not None else None
        if build is not None and own is None:
            found[name] = f"its libraries are {NOT_BUILT}"
        else:
            found[name] = FunctionPython((mesh.code_dir(name), *([own.path] if own else []), *runtime))
    return found


def _runtime_path(layer: Installed, sdk: Installed) -> tuple[Path, ...]:
    """What follows a function's own code and libraries on its path: the layer, then the runtime."""
    return (shipped("asya"), layer.path, sdk.path, runtime_interface())
