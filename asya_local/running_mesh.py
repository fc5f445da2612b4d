"""What the running local stack's mesh file accepts, checked before the gateway is asked, so that a flow,
actor or route it lacks is refused naming those it has (`asya send`, `asya tasks --flow/--actor`); a
deployed mesh's gateway refuses them itself (`--stack`: no mesh file here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asya_local.arguments import likely
from asya_local.local_state import running_state

if TYPE_CHECKING:
    from asya_cdk.config import MeshConfig
    from asya_cdk.flow_config import FlowConfig


class TaskCommandError(ValueError):
    """The command asks for what the mesh cannot do (a flow it has not, `--wait` with `--count`)."""


def running_mesh() -> MeshConfig:
    """The running local stack's mesh file, read to explain a refusal before the gateway is asked. The
    models load here, once a stack is found to run, so that `asya status` and the others start without
    them."""
    config = running_state()["config"]
    from asya_cdk.loading import load_mesh

    return load_mesh(config).config


def known_flow(mesh: MeshConfig, name: str) -> str:
    """A flow of the mesh file, or the refusal naming the flows there are."""
    if name not in mesh.flows:
        known = ", ".join(mesh.flows) or "none"
        raise TaskCommandError(f"unknown flow {name!r} (flows: {known}){likely(name, mesh.flows)}")
    return name


def known_actor(mesh: MeshConfig, name: str) -> str:
    """An actor a task's route may reach in this mesh (`MeshConfig.routed`), or the refusal naming them."""
    if name not in mesh.routed:
        raise TaskCommandError(f"unknown actor {name!r} (actors: {', '.join(mesh.routed)}){likely(name, mesh.routed)}")
    return name


def route_of(mesh: MeshConfig, given: str) -> list[str]:
    """`--route a,b,c` as the gateway takes it: actors of the mesh, and of the crew only x-pause."""
    route = actors(given)
    refused = [actor for actor in route if actor not in mesh.routed]
    if not route or refused:
        named = f"names what no route may: {', '.join(refused)}" if refused else "names no actor"
        hint = likely(refused[0], mesh.routed) if len(refused) == 1 else ""
        raise TaskCommandError(f"--route {named} (a route may name: {', '.join(mesh.routed)}){hint}")
    return route


def actors(given: str) -> list[str]:
    """`--route a,b,c` as a list of actors."""
    return [actor.strip() for actor in given.split(",") if actor.strip()]


def one_input(name: str, flow: FlowConfig, payload: Any) -> None:
    """A list given to a flow that takes one object is most likely a file of inputs, as the examples'
    `inputs.json` is: say how to send one, or each, rather than pass on the schema's refusal."""
    if isinstance(payload, list) and flow.input_schema.get("type") == "object":
        raise TaskCommandError(
            f"the payload is a list of {len(payload)} inputs, and flow {name!r} takes one object: "
            "send one of them, or add --each to send each as its own task"
        )
