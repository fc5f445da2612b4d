"""Maps in flow programs (`p["r"] = [a(x) for x in p["items"]]`, docs/flows.md): the join that gathers a
map's branches is one actor the mesh adds itself, `GATHER`, when any program maps.

A map fans the payload's list out as one branch per item to the mapped actor, plus one branch that
carries the payload itself straight to `GATHER` (so the join has it back without a store of its own),
and `GATHER` gathers them with the joins that exist (`asya.joins`): a join of the actors a map follows
(its sources, which frame their fans for it), failing fast. Its handler hands the joined list on
(`gather_code/flow_gather.py`), and the program's next step puts the outputs into the payload.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from asya.gathering import widest_in_memory
from asya_cdk.actor_config import ActorConfig, JoinConfig
from asya_cdk.config import MeshConfig

GATHER = "flow-gather"
# The arrival that completes a map's join holds every branch at once (`asya.gathering`): 2 GB holds
# about 2,100 branches as large as a payload travels inline, for one invocation per map.
GATHER_MEMORY_MB = 2048
_CODE = Path(__file__).parent / "gather_code"


def with_gather(config: MeshConfig, programs: Mapping[str, Mapping[str, Any]]) -> MeshConfig:
    """The mesh with `GATHER` among its actors if a program maps; as it was otherwise."""
    sources = sorted({source for program in programs.values() for source in map_sources(program)})
    if not sources:
        return config
    gather = ActorConfig(
        handler="flow_gather.gathered", code=str(_CODE), memory=GATHER_MEMORY_MB, join=JoinConfig(branches_of=sources)
    )
    # the widest fan it takes: what its memory holds, within what its timeout reads back (the default)
    widest = min(gather.join_width, widest_in_memory(GATHER_MEMORY_MB, config.payloads.claim_check_bytes))
    join = JoinConfig(branches_of=sources, max_width=widest)
    gather = gather.model_copy(update={"join": join})
    return config.model_copy(update={"actors": {**config.actors, GATHER: gather}})


def is_map(value: ast.expr) -> bool:
    """`[… for … in …]` or `map(…)`: the forms of a map, checked whole by `mapping`."""
    return isinstance(value, ast.ListComp) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "map"
    )


def mapping(expression: ast.expr, variable: str) -> tuple[ast.Name, ast.expr]:
    """The actor a map calls and the list it maps over; a `ValueError` saying the forms, if it is neither."""
    forms = f'{variable}["r"] = [actor(x) for x in {variable}["items"]] or map(actor, {variable}["items"])'
    if isinstance(expression, ast.Call):  # map(a, <list>)
        if len(expression.args) == 2 and not expression.keywords and isinstance(expression.args[0], ast.Name):
            return expression.args[0], expression.args[1]
        raise ValueError(f"a map calls one actor on each item: {forms}")
    generator = (
        expression.generators[0] if isinstance(expression, ast.ListComp) and len(expression.generators) == 1 else None
    )
    element = expression.elt if isinstance(expression, ast.ListComp) else None
    if (
        generator is None
        or generator.ifs
        or generator.is_async
        or not isinstance(generator.target, ast.Name)
        or not isinstance(element, ast.Call)
        or not isinstance(element.func, ast.Name)
        or element.keywords
        or len(element.args) != 1
        or not isinstance(element.args[0], ast.Name)
        or element.args[0].id != generator.target.id
    ):
        raise ValueError(f"a map calls one actor on each item, with no condition: {forms}")
    return element.func, generator.iter


def reached(nodes: Sequence[Mapping[str, Any]], node: int) -> set[int]:
    """The calls, returns, parallels and maps a program can reach from `node` through its decisions
    and edits alone."""
    found: set[int] = set()
    seen: set[int] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        kind = nodes[current]
        if "if" in kind:
            pending += [kind["then"], kind["else"]]
        elif "set" in kind or "gathered" in kind:
            pending.append(kind["next"])
        elif "while" in kind:
            pending += [kind["body"], kind["exit"]]
        else:
            found.add(current)
    return found


def map_sources(program: Mapping[str, Any]) -> set[str]:
    """The actors a map of `program` follows: their sidecars fan its branches out, framed for `GATHER`
    (`check` refuses a map that follows no actor, a pause, or starts an `except`)."""
    nodes = program["nodes"]
    return {
        node["call"]
        for node in nodes
        if "call" in node and any("map" in nodes[found] for found in reached(nodes, node["next"]))
    }
