"""What a task page shows of a task of a program flow: the program's graph alone, with the steps the
task took (a loop's repeats counted), and whether it ran the program the mesh has now.

The steps come from the task's recorded route (`route.prev`, then `route.curr`: every actor it
visited, in order, an actor a loop went back to once per visit), and its branches' routes for a root
that fanned out; a task that succeeded took its last step to x-sink too (`seen.steps_of`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from asya_local.console.graph import Layout, layout
from asya_local.console.seen import steps_of
from asya_local.console.topology import Topology


@dataclass(frozen=True, slots=True)
class ProgramView:
    graph: Layout
    taken: dict[str, int]  # "source target" → times the task (or one of its branches) took that step
    version: str  # the program's version now
    ran: str | None  # the version the task started under, as its record says

    @property
    def other_version(self) -> bool:
        """The task ran another version of the program than the one drawn."""
        return bool(self.ran) and self.ran != self.version


def program_view(
    topology: Topology, task: Mapping[str, Any], branches: Iterable[Mapping[str, Any]] = ()
) -> ProgramView | None:
    """The program view of `task`, or None when its flow is no program flow of this mesh."""
    flow = task.get("flow")
    if not isinstance(flow, str) or flow not in topology.programs:
        return None
    version = str(topology.programs[flow].get("version", ""))
    ran = task.get("program_version")
    return ProgramView(layout(topology.program_of(flow)), steps_counted(task, branches), version, ran)


def steps_counted(task: Mapping[str, Any], branches: Iterable[Mapping[str, Any]] = ()) -> dict[str, int]:
    """How often the task took each step; for a root, a step its branches took as often as the branch
    that took it most (a branch's route begins with the root's)."""
    counted: Counter[str] = Counter()
    for route in (task, *branches):
        mine = Counter(f"{source} {target}" for source, target in steps_of(route))
        counted |= mine
    return dict(counted)
