"""The mesh as the console draws it: its actors (Lambda or Spark, joins marked), the crew, and its
flows as paths through them: a route flow's route, a program flow's steps (`program_steps`: every way
from one actor to the next its program can take). Read from the mesh file for a local stack, and from
a deployed stack (its queues and functions) and its gateway (the flows, programs included) on AWS
(`asya_local.console.deployed`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from asya.joins import JoinPolicy
from asya.names import PAUSE, SINK, SUMP
from asya_cdk.loaded_mesh import LoadedMesh
from asya_local.console.program_steps import ProgramStep, call_lines, program_steps

Kind = Literal["lambda", "spark", "container", "crew"]


@dataclass(frozen=True, slots=True)
class Node:
    """An actor of the mesh, or one of the crew; `join`: a join's `on_failure`, described."""

    name: str
    kind: Kind
    join: str | None = None
    note: str | None = None  # on a program's graph: where the program calls it (`line 5`)


@dataclass(frozen=True)
class Topology:
    namespace: str
    nodes: tuple[Node, ...]
    flows: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # a program flow's: its shortest
    programs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # each program flow's program

    @classmethod
    def of(
        cls,
        namespace: str,
        actors: Iterable[Node],
        flows: Mapping[str, Iterable[str]],
        programs: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Topology:
        """The actors given, the crew, and the flows. x-pause is always among the crew: every mesh deploys
        it, and any handler may rewrite its route to pause there, so a paused task's place (and the steps
        to and from it) shows on the graph even when no flow names it."""
        routes = {name: tuple(route) for name, route in flows.items()}
        crew = [Node(name, "crew") for name in (PAUSE, SINK, SUMP)]
        return cls(namespace, (*actors, *crew), routes, dict(programs or {}))

    @classmethod
    def of_mesh(cls, mesh: LoadedMesh) -> Topology:
        config = mesh.config
        actors = [
            Node(name, settings.runtime, JoinPolicy.of(settings.join.on_failure).describe() if settings.join else None)
            for name, settings in config.actors.items()
        ]
        routes = {name: mesh.flow_route(name) for name in config.flows}
        return cls.of(config.namespace, actors, routes, mesh.programs)

    def steps(self, flow: str) -> tuple[ProgramStep, ...]:
        """A program flow's steps; none for a route flow."""
        program = self.programs.get(flow)
        return program_steps(program) if program is not None else ()

    def program_of(self, flow: str) -> Topology:
        """One program flow alone: the actors it calls, x-sink and x-sump, and its steps (what a task
        page of the flow draws)."""
        steps = self.steps(flow)
        called = {step.target for step in steps} | {step.source for step in steps if step.source}
        lines = call_lines(self.programs[flow])
        nodes = tuple(
            replace(node, note=lines.get(node.name))
            for node in self.nodes
            if node.name in called or node.name in (SINK, SUMP)
        )
        return Topology(self.namespace, nodes, {flow: self.flows.get(flow, ())}, {flow: self.programs[flow]})

    def reaching(self, actors: Iterable[str], flows: Mapping[str, tuple[str, ...]]) -> Topology:
        """Only `actors` (those of the mesh), x-sink and x-sump, and `flows` (what a task's page draws:
        where the task and its flow can go, not every actor of the mesh)."""
        kept = {*actors, SINK, SUMP}
        nodes = tuple(node for node in self.nodes if node.name in kept)
        return Topology(self.namespace, nodes, dict(flows))

    def node(self, name: str) -> Node | None:
        return next((node for node in self.nodes if node.name == name), None)

    @property
    def actors(self) -> list[str]:
        """Every node's name: the queues the console shows."""
        return [node.name for node in self.nodes]
