"""The mesh as the console draws it: its actors (Lambda or Spark, joins marked), the crew, and its
flows as paths through them. Read from the mesh file for a local stack, and from a deployed stack
(its queues and functions) and its gateway (the flows) on AWS (`asya_local.console.deployed`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from asya.joins import JoinPolicy
from asya.names import PAUSE, SINK, SUMP
from asya_cdk.config import LoadedMesh

Kind = Literal["lambda", "spark", "crew"]


@dataclass(frozen=True, slots=True)
class Node:
    """An actor of the mesh, or one of the crew; `join`: a join's `on_failure`, described."""

    name: str
    kind: Kind
    join: str | None = None


@dataclass(frozen=True)
class Topology:
    namespace: str
    nodes: tuple[Node, ...]
    flows: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, namespace: str, actors: Iterable[Node], flows: Mapping[str, Iterable[str]]) -> Topology:
        """The actors given, the crew, and the flows. x-pause is always among the crew: every mesh deploys
        it, and any handler may rewrite its route to pause there, so a paused task's place (and the steps
        to and from it) shows on the graph even when no flow names it."""
        routes = {name: tuple(route) for name, route in flows.items()}
        crew = [Node(name, "crew") for name in (PAUSE, SINK, SUMP)]
        return cls(namespace, (*actors, *crew), routes)

    @classmethod
    def of_mesh(cls, mesh: LoadedMesh) -> Topology:
        config = mesh.config
        actors = [
            Node(name, settings.runtime, JoinPolicy.of(settings.join.on_failure).describe() if settings.join else None)
            for name, settings in config.actors.items()
        ]
        return cls.of(config.namespace, actors, {name: flow.route for name, flow in config.flows.items()})

    def node(self, name: str) -> Node | None:
        return next((node for node in self.nodes if node.name == name), None)

    @property
    def actors(self) -> list[str]:
        """Every node's name: the queues the console shows."""
        return [node.name for node in self.nodes]
