"""`asya check --account`: a namespace that shares its prefix with a deployed mesh's.

Every name a mesh makes starts `asya-<namespace>-`, and the grants that let an actor or the gateway
send to the mesh's queues name them by that prefix (`asya-<namespace>-*`: a route is decided at run
time, so any queue of the mesh may be next). Beside a mesh `red`, a mesh `red-prod` would have its
queues under `red`'s prefix, and `red`'s actors and callers could put work on them. So a namespace is
refused when a deployed mesh's names start with its prefix, or its own names would start with a
deployed mesh's prefix. A deployed mesh is known by its x-sink queue, which every mesh has.
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
            f"namespace: {namespace!r} is a prefix of the deployed mesh {under[0]!r}: the grants of "
            f"{namespace!r} name its queues as asya-{namespace}-*, which covers {under[0]!r}'s too; "
            "choose a namespace that is no deployed mesh's prefix"
        )
    shorter = [namespace[:cut] for cut in range(len(namespace)) if namespace[cut] == "-"]
    covering = [other for other in shorter if _deployed(sqs, other)]
    if covering:
        problems.append(
            f"namespace: the deployed mesh {covering[0]!r} is a prefix of {namespace!r}: its grants name its "
            f"queues as asya-{covering[0]}-*, which would cover this mesh's; choose a namespace that does not "
            f"start with '{covering[0]}-'"
        )
    return problems


def _deployed(sqs: Any, namespace: str) -> bool:
    sink = resource_name(namespace, SINK)
    return sink in _queue_names(sqs, sink)


def _queue_names(sqs: Any, prefix: str) -> set[str]:
    pages = sqs.get_paginator("list_queues").paginate(QueueNamePrefix=prefix)
    return {url.rsplit("/", 1)[-1] for page in pages for url in page.get("QueueUrls", [])}
