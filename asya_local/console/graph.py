"""Where the console places the mesh's nodes and edges, for the page to draw as SVG.

Columns follow the routes: an actor's column is the furthest position it holds in any flow (in a
program flow, the most steps it can be from the start without going round a loop), so every flow
reads left to right; x-sink (and under it x-sump) come after the last column. Within a column,
actors are stacked in the order the flows first name them. Actors no flow names (reached only through
a handler's rewritten route, a policy's `on_exhausted`, a sink hook) go in a row of their own below.
An edge joins two actors that follow each other in some flow (and each flow's last actor to x-sink);
an edge that goes back (an actor earlier in one flow than in another) is drawn below the nodes. A
program flow's steps are edges too (`asya_local.console.program_steps`), each marked by how it is
taken: behind a decision, round a loop again, by an `except`, into a parallel branch; its conditions
are its title. A loop's step back to the actor itself is drawn as a ring above it.

Steps that recent tasks took and no flow declares (`asya_local.console.seen`: a handler rewrote the
route) are edges too, marked `seen` (drawn dashed, with a legend). The actors in no flow stand in the
row below, from the crew's column leftwards, in the mesh's order: where such a step mostly goes (after
the flows' actors), so it reads left to right, and where they stand whatever steps have been seen, so
the layout does not move when a step is first seen or when its tasks are no longer recent (the review
saw `escalate` jump from the bottom-left to under x-sump between loads). A step back up its own column
(to x-sink, say) is drawn round its right side.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from asya.names import SINK, SUMP
from asya_local.console.program_steps import ProgramStep
from asya_local.console.seen import Step
from asya_local.console.topology import Node, Topology

NODE_WIDTH = 176
NODE_HEIGHT = 84
GAP_X = 64
GAP_Y = 28
MARGIN = 16


@dataclass(frozen=True, slots=True)
class Box:
    node: Node
    x: int
    y: int

    @property
    def middle_y(self) -> int:
        return self.y + NODE_HEIGHT // 2


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    flows: tuple[str, ...]  # the flows that take it (none: x-sink's failures to x-sump, or a seen step)
    path: str  # SVG path data
    seen: bool = False  # a step tasks took that no flow declares
    kind: str = ""  # a program's step: "decision", "loop", "except" or "parallel" ("" for a plain one)
    label: str = ""  # the conditions a program's step is taken on, one set a line
    middle: tuple[float, float] | None = None  # where a program's step is marked, and counted on a task's page


@dataclass(frozen=True, slots=True)
class Layout:
    boxes: tuple[Box, ...]
    edges: tuple[Edge, ...]
    width: int
    height: int


def layout(topology: Topology, seen: Iterable[Step] = ()) -> Layout:
    """Where each node and edge goes; `seen`: the steps recent tasks took (declared ones or not)."""
    columns, order = _columns(topology)
    last = max(columns.values(), default=-1)
    columns[SINK] = columns[SUMP] = last + 1
    rows: dict[int, list[str]] = {}
    for name in [*order, SINK, SUMP]:
        rows.setdefault(columns[name], []).append(name)
    boxes: dict[str, Box] = {}
    for column, names in rows.items():
        for row, name in enumerate(names):
            node = topology.node(name)
            if node is not None:
                boxes[name] = Box(node, _x(column), _y(row))
    deepest = max((len(names) for names in rows.values()), default=0)
    loose = [node for node in topology.nodes if node.name not in boxes]  # in no flow
    crew_column = last + 1
    for index, node in enumerate(loose):  # right to left from the crew's column, a row more when full
        row, back = divmod(index, crew_column + 1)
        boxes[node.name] = Box(node, _x(crew_column - back), _y(deepest + row) + GAP_Y)
    declared = _pairs(topology)
    boxes = _lowered(boxes, [(boxes[s], boxes[t]) for s, t in declared if s in boxes and t in boxes])
    marks = _marks(topology)
    edges = [
        _edge(source, target, flows, boxes, marks.get((source, target), []))
        for (source, target), flows in declared.items()
        if source in boxes and target in boxes
    ]
    edges.append(Edge(SINK, SUMP, (), _path(boxes[SINK], boxes[SUMP])))
    edges += [
        Edge(source, target, (), _path(boxes[source], boxes[target]), seen=True)
        for source, target in sorted(set(seen) - set(declared) - {(SINK, SUMP)})
        if source in boxes and target in boxes and source != target
    ]
    room = GAP_X // 2 if any(edge.seen for edge in edges) else 0  # for a seen step round a node's right side
    width = max(box.x for box in boxes.values()) + NODE_WIDTH + MARGIN + room
    height = max(box.y for box in boxes.values()) + NODE_HEIGHT + MARGIN + GAP_Y
    return Layout(tuple(boxes.values()), tuple(edges), width, height)


def _edge(source: str, target: str, flows: tuple[str, ...], boxes: dict[str, Box], steps: list[ProgramStep]) -> Edge:
    """A declared step; one a program takes is marked with its strongest kind and titled by its
    conditions."""
    kinds = [step.kind for step in steps if step.kind != "next"]
    kind = min(kinds, key=("loop", "except", "decision", "parallel").index, default="")
    label = "\n".join(dict.fromkeys(step.label for step in steps if step.label))
    path = _path(boxes[source], boxes[target])
    return Edge(source, target, flows, path, kind=kind, label=label, middle=_middle(path))


def _columns(topology: Topology) -> tuple[dict[str, int], list[str]]:
    """Each routed actor's column (its furthest position in any route, or from a program's start) and
    the order flows name them."""
    columns: dict[str, int] = {}
    order: list[str] = []
    for flow, route in topology.flows.items():
        if flow in topology.programs:
            positions = _depths(topology.steps(flow))
        else:
            positions = {name: at for at, name in enumerate(route)}  # a name twice: its furthest
        for name, position in positions.items():
            columns[name] = max(columns.get(name, 0), position)
            if name not in order:
                order.append(name)
    return columns, order


def _depths(steps: tuple[ProgramStep, ...]) -> dict[str, int]:
    """Each actor a program calls, by the most steps it can be from the start without going back (a
    loop's step back, or any step that closes a cycle: a loop entered from its first actor's call
    before it, `evaluate → refine → evaluate`, has no step marked as the loop's), in the order the
    steps name them."""
    forward = [step for step in steps if step.kind != "loop" and step.target != SINK]
    back = _steps_back(forward)
    forward = [step for step in forward if (step.source, step.target) not in back]
    depths = {step.target: 0 for step in forward if step.source is None}
    for _ in range(len(forward)):  # longest paths in a graph without cycles: at most one round per step
        moved = False
        for step in forward:
            if step.source in depths and depths.get(step.target, -1) < depths[step.source] + 1:
                depths[step.target] = depths[step.source] + 1
                moved = True
        if not moved:
            break
    return depths


def _steps_back(steps: list[ProgramStep]) -> set[tuple[str | None, str]]:
    """The steps that close a cycle, walking depth first from the program's start: each goes back to
    an actor still on the walk's path."""
    after: dict[str | None, list[str]] = {}
    for step in steps:
        after.setdefault(step.source, []).append(step.target)
    back: set[tuple[str | None, str]] = set()
    on_path: set[str | None] = set()
    done: set[str | None] = set()

    def walk(actor: str | None) -> None:
        on_path.add(actor)
        for target in after.get(actor, []):
            if target in on_path:
                back.add((actor, target))
            elif target not in done:
                walk(target)
        on_path.discard(actor)
        done.add(actor)

    walk(None)
    return back


def _pairs(topology: Topology) -> dict[tuple[str, str], tuple[str, ...]]:
    """Consecutive actors of each route flow (its last to x-sink) and each step a program flow can take,
    with the flows that take each step."""
    pairs: dict[tuple[str, str], tuple[str, ...]] = {}
    for flow, route in topology.flows.items():
        steps = (
            [(step.source, step.target) for step in topology.steps(flow) if step.source is not None]
            if flow in topology.programs
            else list(zip(route, (*route[1:], SINK), strict=True))
        )
        for pair in dict.fromkeys(steps):
            pairs[pair] = (*pairs.get(pair, ()), flow)
    return pairs


def _marks(topology: Topology) -> dict[tuple[str, str], list[ProgramStep]]:
    """The program steps behind each pair of actors."""
    marks: dict[tuple[str, str], list[ProgramStep]] = {}
    for flow in topology.programs:
        for step in topology.steps(flow):
            if step.source is not None:
                marks.setdefault((step.source, step.target), []).append(step)
    return marks


def _middle(path: str) -> tuple[float, float]:
    """The middle of a path `_path` drew: of its cubic curve at t = ½, or of its line."""
    words = path.replace("M", " ").replace("C", " ").replace("L", " ").split()
    points = [(float(x), float(y)) for x, y in (word.split(",") for word in words)]
    if len(points) == 4:
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = points
        return ((x0 + 3 * x1 + 3 * x2 + x3) / 8, (y0 + 3 * y1 + 3 * y2 + y3) / 8)
    (x0, y0), (x1, y1) = points[0], points[-1]
    return ((x0 + x1) / 2, (y0 + y1) / 2)


def _lowered(boxes: dict[str, Box], steps: list[tuple[Box, Box]]) -> dict[str, Box]:
    """The boxes moved down, when a step over the top row (an arc over the actors it skips, or a ring)
    needs more room above it than the margin leaves."""
    lifts = [_lift(source, target) for source, target in steps if source.y == MARGIN]
    down = max(lifts, default=0) * 3 // 4 + GAP_Y // 2 - MARGIN  # a cubic's peak is ¾ of its lift
    if max(lifts, default=0) == 0 or down <= 0:
        return boxes
    return {name: Box(box.node, box.x, box.y + down) for name, box in boxes.items()}


def _lift(source: Box, target: Box) -> int:
    """How high a step over the top of its row rises: an arc over the actors it skips (higher the more
    it skips, so arcs that start together part), a ring over the actor itself; 0 for any other step."""
    if target is source:
        return MARGIN
    skipped = (target.x - source.x) // (NODE_WIDTH + GAP_X) - 1
    return GAP_Y + 14 * (skipped - 1) if target.y == source.y and skipped > 0 else 0


def _x(column: int) -> int:
    return MARGIN + column * (NODE_WIDTH + GAP_X)


def _y(row: int) -> int:
    return MARGIN + row * (NODE_HEIGHT + GAP_Y)


def _path(source: Box, target: Box) -> str:
    """A curve from the source's right side to the target's left; a step back (or down the same
    column) is drawn from the source's bottom to the target's bottom instead; a step to itself, as a
    ring over its top; one along a row over actors it skips, as an arc over them (not through them)."""
    lift = _lift(source, target)
    if lift:  # over the top: a ring, or an arc over the actors between
        x1 = source.x + NODE_WIDTH // 2 + (-20 if target is source else 20)
        x2 = target.x + NODE_WIDTH // 2 + (20 if target is source else -20)
        return f"M{x1},{source.y} C{x1},{source.y - lift} {x2},{target.y - lift} {x2},{target.y}"
    if target.x > source.x:
        x1, y1, x2, y2 = source.x + NODE_WIDTH, source.middle_y, target.x, target.middle_y
        bend = (x2 - x1) / 2
        return f"M{x1},{y1} C{x1 + bend:g},{y1} {x2 - bend:g},{y2} {x2},{y2}"
    x1, y1 = source.x + NODE_WIDTH // 2, source.y + NODE_HEIGHT
    x2, y2 = target.x + NODE_WIDTH // 2, target.y + NODE_HEIGHT
    if target.x == source.x and target.y < source.y:  # up the same column: round its right side
        x1, y1, x2, y2 = source.x + NODE_WIDTH, source.middle_y, target.x + NODE_WIDTH, target.middle_y
        out = x1 + GAP_X // 2
        return f"M{x1},{y1} C{out},{y1} {out},{y2} {x2},{y2}"
    if target.x == source.x:  # the same column: the target is below
        x2, y2 = target.x + NODE_WIDTH // 2, target.y
        return f"M{x1},{y1} L{x2},{y2}"
    low = max(y1, y2) + GAP_Y
    return f"M{x1},{y1} C{x1},{low} {x2},{low} {x2},{y2}"
