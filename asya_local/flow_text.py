"""A compiled flow program in words, for `asya flow show`: one line per node of the program, in the
order of its source, each saying what it does and where the program goes from it.

      line 18  call draft  → the loop at line 19
      line 19  while p['score'] < 0.8 (at most 3 times)  yes → refine (line 20); no → return (line 22)
      line 20    call refine  → evaluate (line 21)

The compiled form has every decision, edit, loop, `except` and `parallel` (`asya.flow_program`); this reads
it back rather than the source, so what is printed is what the sidecars will do. Nodes inside a loop
are indented once per loop around them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asya.names import SINK


def program_lines(program: Mapping[str, Any]) -> list[str]:
    """The program's nodes in source order, each what it does and where it goes."""
    nodes: list[dict[str, Any]] = program["nodes"]
    order = _reading_order(program)
    end_line = min((node.get("line") or 0 for node in nodes), default=0)  # the `def`: the function's end
    lines = []
    for index in order:
        node = nodes[index]
        at = "end" if _is_end(node, end_line) else f"line {node.get('line')}"
        what, where = _said(nodes, node, end_line)
        indent = "  " * (len(node.get("in", ())) - ("while" in node))  # a loop's own test is not inside it
        lines.append(f"{at:>9}  {indent}{what}  {where}")
    return lines


def _said(nodes: list[dict[str, Any]], node: Mapping[str, Any], end_line: int) -> tuple[str, str]:
    """What a node does, and where the program goes from it."""
    if "call" in node:
        caught = [
            f"on {' or '.join(names)} → {_target(nodes, target, end_line)}" for names, target in node.get("catch", [])
        ]
        return f"call {node['call']}", "; ".join([f"→ {_target(nodes, node['next'], end_line)}", *caught])
    if "return" in node:
        return ("return (the end of the function)" if _is_end(node, end_line) else "return"), f"→ {SINK}"
    if "set" in node:
        return f"edit {node.get('src', '…')}", f"→ {_target(nodes, node['next'], end_line)}"
    if "map" in node:
        each, gather = nodes[node["map"]]["call"], nodes[node["gather"]]["call"]
        return f"map {node.get('src', '…')}", f"each item → {each}, gathered at {gather}"
    if "gathered" in node:
        return "the map's outputs into the payload", f"→ {_target(nodes, node['next'], end_line)}"
    if "if" in node:
        then, other = _target(nodes, node["then"], end_line), _target(nodes, node["else"], end_line)
        return f"if {node.get('src', '…')}", f"yes → {then}; no → {other}"
    if "while" in node:
        body, out = _target(nodes, node["body"], end_line), _target(nodes, node["exit"], end_line)
        return f"while {node.get('src', '…')} (at most {node['max']} times)", f"yes → {body}; no → {out}"
    branches = " | ".join(_chain(nodes, branch, node["join"]) for branch in node["parallel"])
    return f"parallel: {branches}", f"joined at {_target(nodes, node['join'], end_line)}"


def _target(nodes: list[dict[str, Any]], index: int, end_line: int) -> str:
    """A node as the place the program goes to."""
    node = nodes[index]
    line = node.get("line")
    if "call" in node:
        return f"{node['call']} (line {line})"
    if "return" in node:
        return "return (the end)" if _is_end(node, end_line) else f"return (line {line})"
    if "set" in node:
        return f"the edit at line {line}"
    if "map" in node:
        return f"the map at line {line}"
    if "gathered" in node:
        return f"the map's outputs (line {line})"
    if "if" in node:
        return f"the decision at line {line}"
    if "while" in node:
        return f"the loop at line {line}"
    return f"the parallel at line {line}"


def _chain(nodes: list[dict[str, Any]], index: int, join: int) -> str:
    """A parallel branch: its calls, in order, up to the join."""
    actors = []
    while index != join and "call" in nodes[index]:
        actors.append(nodes[index]["call"])
        index = nodes[index]["next"]
    return " → ".join(actors)


def _is_end(node: Mapping[str, Any], end_line: int) -> bool:
    """The return the compiler adds for the end of the function (on the `def`'s line, before the body)."""
    return "return" in node and node.get("line") == end_line


def _reading_order(program: Mapping[str, Any]) -> list[int]:
    """Every node once, by its line, nodes of one line (`c(b(p))`) in the order the program takes them,
    the function's end last."""
    nodes: list[dict[str, Any]] = program["nodes"]
    taken: dict[int, int] = {}
    pending = [int(program["start"])]
    while pending:
        index = pending.pop(0)
        if index in taken:
            continue
        taken[index] = len(taken)
        node = nodes[index]
        following = [node.get(key) for key in ("next", "then", "else", "body", "exit", "join", "map", "gather")]
        following += [*node.get("parallel", []), *(target for _, target in node.get("catch", []))]
        pending += [int(item) for item in following if item is not None]
    end_line = min((node.get("line") or 0 for node in nodes), default=0)
    return sorted(
        taken,
        key=lambda index: (_is_end(nodes[index], end_line), nodes[index].get("line") or 0, taken[index]),
    )
