"""`asya flow show <flow>`: what a flow does, from the mesh file alone (no stack need run).

A route flow is its route. A program flow (docs/flows.md) is its compiled program in words
(`asya_local.flow_text`: each call with its line, each decision and loop with its condition and where
each way goes, `except`s, parallel branches and their join, returns) and a drawing of the steps it can
take, written as an SVG file: the graph a task page of the flow draws in the console
(`asya_local.console.drawing`), so what is seen here is what is seen there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from asya.names import SINK
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_local.arguments import likely
from asya_local.console.drawing import graph_svg
from asya_local.console.graph import layout
from asya_local.console.program_steps import ProgramStep
from asya_local.console.topology import Topology
from asya_local.flow_text import program_lines
from asya_local.mesh_parsers import IMAGES


def run(args: argparse.Namespace, console: Console) -> int:
    mesh = load_mesh(args.config)
    flows = mesh.config.flows
    if args.flow not in flows:
        known = "\n".join(f"  {name}" for name in flows) or "  (none)"
        hint = likely(args.flow, flows)
        listed = f"{hint} Its flows" if hint else "; its flows"
        console.print(f"asya: no flow {args.flow!r} in {args.config}{listed}:\n{known}", highlight=False)
        return 1
    flow = flows[args.flow]
    if flow.description:
        console.print(flow.description, highlight=False)
    if args.flow not in mesh.programs:
        console.print(f"flow {args.flow}: route {' → '.join([*flow.route, SINK])}", highlight=False)
        return 0
    image = args.image or args.config.parent / IMAGES / f"{args.flow}.svg"
    show_program(mesh, args.flow, image, console)
    return 0


def show_program(mesh: LoadedMesh, name: str, image: Path, console: Console) -> None:
    """The program of flow `name` in words, and its drawing written to `image`."""
    program = mesh.programs[name]
    reference = mesh.config.flows[name].program
    console.print(
        f"flow {name}: program {reference} ({program['source']}), version {program['version']}", highlight=False
    )
    console.print(f"at its shortest: {' → '.join([*mesh.flow_route(name), SINK])}", highlight=False)
    console.print()
    for line in program_lines(program):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    topology = Topology.of_mesh(mesh).program_of(name)
    console.print()
    console.print("the steps it can take (actor → actor, on what):", highlight=False)
    for step in topology.steps(name):
        console.print(f"  {_step_text(step)}", highlight=False, markup=False, soft_wrap=True)
    image.parent.mkdir(parents=True, exist_ok=True)
    image.write_text(graph_svg(layout(topology), f"The steps of flow {name}'s program"))
    console.print()
    console.print(f"drawing written to {image}", highlight=False)


def _step_text(step: ProgramStep) -> str:
    source = step.source or "(start)"
    kind = "" if step.kind == "next" else f" [{step.kind}]"
    return f"{source} → {step.target}{kind}" + (f": {step.label}" if step.label else "")
