"""`asya check --account`: a namespace that shares its prefix with a deployed mesh's.

Every name a mesh makes starts `asya-<namespace>-`. The mesh's queue grants name each queue exactly
(`asya_cdk.queue_grants`), but names shared under one prefix still confuse people and tools that
select by prefix (dashboards, `list-queues`, an operator's own policies): beside a mesh `red`, a mesh
`red-prod` would have its queues under `red`'s prefix. So a namespace is refused when a deployed
mesh's names start with its prefix, or its own names would start with a deployed mesh's prefix. A
deployed mesh is known by its x-sink queue, which every mesh has.
"""

from __future__ import annotations

from typing import Any

from asya.names import SINK, resource_name
from asya_cdk.loaded_mesh import LoadedMesh


def namespace_problems(mesh: LoadedMesh, sqs: Any) -> list[str]:
    """What makes the mesh's namespace ambiguous in this account and region; [] when nothing does."""
    namespace = mesh.config.namespace
    own = resource_name(namespace, SINK)
    suffix = f"-{SINK}"
    problems = []
    under = sorted(
        name.removeprefix("asya-").removesuffix(suffix)
        for name in _queue_names(sqs, f"asya-{namespace}-")
        if name.endswith(suffix) and name != own
    )
    if under:
        problems.append(
            f"namespace: {namespace!r} is a prefix of the deployed mesh {under[0]!r}: names under "
            f"asya-{namespace}-* would cover {under[0]!r}'s too; "
            "choose a namespace that is no deployed mesh's prefix"
        )
    shorter = [namespace[:cut] for cut in range(len(namespace)) if namespace[cut] == "-"]
    covering = [other for other in shorter if _deployed(sqs, other)]
    if covering:
        problems.append(
            f"namespace: the deployed mesh {covering[0]!r} is a prefix of {namespace!r}: names under "
            f"asya-{covering[0]}-* would cover this mesh's; choose a namespace that does not "
            f"start with '{covering[0]}-'"
        )
    return problems


def _deployed(sqs: Any, namespace: str) -> bool:
    sink = resource_name(namespace, SINK)
    return sink in _queue_names(sqs, sink)


def _queue_names(sqs: Any, prefix: str) -> set[str]:
    pages = sqs.get_paginator("list_queues").paginate(QueueNamePrefix=prefix)
    return {url.rsplit("/", 1)[-1] for page in pages for url in page.get("QueueUrls", [])}
