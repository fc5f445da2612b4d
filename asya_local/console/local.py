"""The console of a local stack: the mesh file's topology, stats read from the local endpoint and the
worker log, the gateway `asya up` serves on loopback with its API key."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asya.names import CONTAINER_SERVICES_OUTPUT
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_local import issuer
from asya_local.console.activity import ActivityCounter
from asya_local.console.app import Console
from asya_local.console.stats import LocalStats
from asya_local.console.task_logs import LocalTaskLogs
from asya_local.console.topology import Topology
from asya_local.container_counts import ServicePlace, service_places
from asya_local.issuer import LocalIssuer, local_gateway
from asya_local.load_failures import LoadFailures
from asya_local.roles import local_client
from asya_local.stack import LocalStack
from asya_local.worklog import follow

LOCAL_REFRESH_SECONDS = 1.0


@dataclass(frozen=True)
class LocalMesh:
    """Where a running local stack is, as `asya up` runs it or records it in `.asya/local.json`."""

    mesh: LoadedMesh
    endpoint: str
    gateway_url: str
    api_key: str
    batches_table: str | None = None
    log: Path | None = None
    issuer: LocalIssuer | None = None  # with sign-in: the console's requests carry an admin's token
    places: dict[str, ServicePlace] = field(default_factory=dict)  # the container actors' services

    @classmethod
    def of_stack(cls, stack: LocalStack, log: Path | None = None) -> LocalMesh:
        if stack.gateway_url is None:
            raise ValueError("the console needs the status gateway, which this mesh does not deploy")
        batches = stack.outputs.get("SparkBatchesTable")
        places = service_places(stack.outputs)
        return cls(stack.mesh, stack.endpoint, stack.gateway_url, stack.api_key, batches, log, stack.issuer, places)

    @classmethod
    def of_state(cls, state: dict[str, str]) -> LocalMesh:
        log = state.get("log")
        return cls(
            load_mesh(state["config"]),
            state["endpoint"],
            state["gateway_url"],
            state["api_key"],
            state.get("spark_batches_table") or None,
            Path(log) if log else None,
            issuer.of_state(state),
            service_places({CONTAINER_SERVICES_OUTPUT: state.get("container_services", "")}),
        )


def local_console(
    where: LocalMesh,
    activity: ActivityCounter,
    failures: LoadFailures | None = None,
    gateway_origins: tuple[str, ...] = (),
) -> Console:
    """The console; `activity` (and `failures`: the actors that cannot load their handler) are fed the
    worker log's lines by whoever reads them (`follow_log`). `gateway_origins`: the console's origins
    the local gateway allows, whose task pages follow tasks from it (`asya_local.console.task_live`)."""
    topology = Topology.of_mesh(where.mesh)
    clients: dict[str, Any] = {}

    def client(service: str) -> Any:
        if service not in clients:
            clients[service] = local_client(service, where.endpoint)
        return clients[service]

    stats = LocalStats(
        where.endpoint,
        topology.namespace,
        actors=topology.actors,
        activity=activity,
        client=client,
        batches_table=where.batches_table,
        failures=failures,
        places=where.places,
    )
    return Console(
        topology,
        stats,
        local_gateway(where.gateway_url, where.api_key, where.issuer),
        f"the local stack at {where.endpoint}",
        refresh=LOCAL_REFRESH_SECONDS,
        log=str(where.log) if where.log else None,
        history=activity.history,
        task_logs=LocalTaskLogs(where.log) if where.log else None,
        gateway_origins=gateway_origins,
    )


def follow_log(path: Path, take: Callable[[str], object], stop: threading.Event) -> threading.Thread:
    """Feed a worker log's lines to `take`, in a thread, until `stop`: how a console started beside
    `asya up` counts the work the stack's own process sees. The log is read from its beginning (it
    holds the running stack's life only: `asya up` starts it anew), so the actors' history covers
    what ran before the console started, then followed as it grows."""
    thread = threading.Thread(target=lambda: [take(line) for line in follow(path, stop, from_start=True)], daemon=True)
    thread.start()
    return thread
