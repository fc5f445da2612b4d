"""The handler of the mesh's gather of mapped lists (`asya_cdk.flow_maps`): the join of a map's branches.

Its sidecar gathers the branches as any join's does and gives this handler their outputs in item
order, after the payload the map started from (`[payload, *outputs]`); the program's next step puts
the outputs into the payload (`asya.flow_program`). So it has nothing to do but hand the list on.
"""

from __future__ import annotations

from typing import Any


def gathered(branches: list[Any]) -> list[Any]:
    """The joined list, unchanged: the program takes it apart, not the handler."""
    return branches
