"""The AWS quotas and naming rules a valid mesh file can still break at deploy, checked when it loads.

Each problem is `<field>: <what AWS allows>`, so `load_mesh` and `asya check` can name the file and
the field. The mesh file's own shape (types, ranges, unknown fields) is `asya_cdk.config`'s; this
module holds what comes from AWS: name lengths, whole seconds, event source concurrency, dead-letter
retention and each function's environment size (`asya_cdk.limits`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from asya.gathering import completing_seconds
from asya.names import BACKLOG, CREW, GATEWAY_FUNCTIONS, SPARK_GUARD, collector_name, resource_name
from asya_cdk.container_config import FARGATE_STORAGE_GIB, ROOT_VOLUME_GB
from asya_cdk.limits import (
    EMR_APPLICATION_NAME_MAX,
    LAMBDA_FUNCTION_NAME_MAX,
    SQS_MAX_CONCURRENCY_RANGE,
    SUMP_RETENTION,
)
from asya_cdk.longest import environment_problems
from asya_cdk.needs import LAMBDA_EPHEMERAL_STORAGE_MB, TMP_SPARE_MB

if TYPE_CHECKING:
    from asya_cdk.actor_config import ActorConfig
    from asya_cdk.loaded_mesh import LoadedMesh

# Fields that reach an integer AWS property, and that property.
WHOLE_SECONDS = {
    "function_timeout": "Lambda's Timeout",
    "batching_window": "the SQS event source's MaximumBatchingWindowInSeconds",
    "retention": "SQS's MessageRetentionPeriod",
}


def mesh_problems(mesh: LoadedMesh) -> list[str]:
    """Every rule broken, each on its own."""
    problems = [*name_problems(mesh)]
    for name, actor in mesh.config.actors.items():
        problems += whole_second_problems(name, actor)
        problems += concurrency_problems(name, actor)
        if actor.runtime == "container":
            problems += task_storage_problems(mesh, name)
        else:
            problems += storage_problems(mesh, name)
        problems += join_width_problems(name, actor)
    problems += redrive_retention_problems(mesh.redriven_retention(), SUMP_RETENTION)
    if (jwt := mesh.config.gateway.jwt) is not None:
        problems += jwt.domain_problems(mesh.config.namespace)
    return problems + environment_problems(mesh)


def name_problems(mesh: LoadedMesh) -> list[str]:
    """Lambda function names and EMR Serverless application names are at most 64 characters."""
    namespace = mesh.config.namespace
    problems = []
    for name, actor in mesh.config.actors.items():
        names = {resource_name(namespace, name): ("function", LAMBDA_FUNCTION_NAME_MAX)}
        if actor.runtime == "spark":
            names[resource_name(namespace, name)] = (
                "function and EMR Serverless application",
                EMR_APPLICATION_NAME_MAX,
            )
            names[collector_name(namespace, name)] = ("collector function", LAMBDA_FUNCTION_NAME_MAX)
        problems += _too_long(f"actors.{name}", names)
    own = (
        *CREW,
        *GATEWAY_FUNCTIONS,
        *([SPARK_GUARD] if mesh.spark_actors else []),
        *([BACKLOG] if mesh.container_actors else []),
    )
    mesh_own = {resource_name(namespace, name): ("function", LAMBDA_FUNCTION_NAME_MAX) for name in own}
    return problems + _too_long("namespace", mesh_own)


def _too_long(field: str, names: dict[str, tuple[str, int]]) -> list[str]:
    return [
        f"{field}: the {what} name {name} is {len(name)} characters; AWS allows {limit} "
        "(shorten the namespace or the actor's name)"
        for name, (what, limit) in names.items()
        if len(name) > limit
    ]


def whole_second_problems(name: str, actor: ActorConfig) -> list[str]:
    problems = []
    for field, aws in WHOLE_SECONDS.items():
        value = getattr(actor, field)
        if value is not None and value != int(value):
            problems.append(
                f"actors.{name}.{field}: {value:g} s is not a whole number of seconds, and {aws} is an integer"
            )
    return problems


def concurrency_problems(name: str, actor: ActorConfig) -> list[str]:
    """An SQS event source runs at least 2 batches at once and ignores the function's reserved
    concurrency: batches it starts beyond it are throttled, and each throttle counts as a receive."""
    reserved, maximum = actor.reserved_concurrency, actor.max_concurrency
    if reserved is None:
        return []
    lowest = SQS_MAX_CONCURRENCY_RANGE[0]
    if reserved < lowest:
        return [
            f"actors.{name}.reserved_concurrency: {reserved} is below {lowest}, the least an SQS event source "
            f"runs at once; throttled batches would be redriven to x-sump (to stop an actor, disable its "
            f"event source mapping instead)"
        ]
    if maximum is not None and maximum > reserved:
        return [
            f"actors.{name}.max_concurrency: {maximum} is above reserved_concurrency {reserved}; the event "
            f"source would start batches the function may not run, and throttled batches are redriven to "
            f"x-sump (leave max_concurrency out and it follows reserved_concurrency)"
        ]
    return []


def storage_problems(mesh: LoadedMesh, name: str) -> list[str]:
    """An actor's files are fetched into /tmp at its start: they must fit the space it has there."""
    files = mesh.files_bytes(name)
    if not files:
        return []
    needed = math.ceil(files / 2**20) + TMP_SPARE_MB
    storage = mesh.ephemeral_storage(name) or LAMBDA_EPHEMERAL_STORAGE_MB[0]
    if needed > LAMBDA_EPHEMERAL_STORAGE_MB[1]:
        return [
            f"actors.{name}.files: {needed:,} MB in /tmp at the start (a folder counts twice: its zip, then "
            f"its files), more than Lambda's largest ephemeral storage ({LAMBDA_EPHEMERAL_STORAGE_MB[1]:,} MB); "
            "put the largest in the code folder of a container image actor (package: image) instead"
        ]
    if needed > storage:
        return [
            f"actors.{name}.ephemeral_storage: {storage:,} MB cannot hold its files at the start ({needed:,} MB "
            f"with {TMP_SPARE_MB} MB to spare; a folder counts twice); leave it out to size it for them, or "
            "raise it"
        ]
    return []


def task_storage_problems(mesh: LoadedMesh, name: str) -> list[str]:
    """A Fargate task fetches the actor's files into its ephemeral storage (`container.storage`); a GPU
    task into its instance's root volume, whose images share it."""
    container = mesh.config.actors[name].container
    files = mesh.files_bytes(name)
    if container is None or not files:
        return []
    needed = math.ceil((math.ceil(files / 2**20) + TMP_SPARE_MB) / 1024)
    if container.gpu:
        room, field = ROOT_VOLUME_GB // 2, "files"  # half for the images (`asya_cdk.container_capacity`)
    else:
        room, field = container.storage_gib, "container.storage"
    if needed <= room:
        return []
    return [
        f"actors.{name}.{field}: its files need about {needed} GiB at the start (a folder counts twice), more "
        f"than the task's {room} GiB; raise container.storage (up to {FARGATE_STORAGE_GIB[1]}) or ship them in "
        "the image's code folder"
    ]


def join_width_problems(name: str, actor: ActorConfig) -> list[str]:
    """The arrival that completes a join's widest fan reads every branch back in one invocation: it
    must fit the join's batch time (its function's timeout, or a container batch's clock), with half of
    it left for the handler. Only a `max_width`
    the mesh sets can fail this: the default is the widest that fits."""
    if actor.join is None or actor.join.max_width is None:
        return []
    reading = completing_seconds(actor.join.max_width)
    if reading <= actor.batch_time / 2:
        return []
    raise_it = "raise timeout" if actor.runtime == "container" else "raise function_timeout"
    return [
        f"actors.{name}.join.max_width: the completing arrival of a fan of {actor.join.max_width:,} branches may "
        f"take {reading:,.0f} s to read them back, more than half the join's batch time "
        f"({actor.batch_time:g} s); lower max_width (join in stages) or {raise_it}"
    ]


def redrive_retention_problems(retention: dict[str, float], sump_retention: float) -> list[str]:
    """SQS keeps a redriven message only until its original enqueue time plus the dead-letter queue's
    retention, so x-sump must keep messages at least as long as every queue that redrives into it."""
    return [
        f"{field}: {seconds:g} s is longer than x-sump keeps messages ({sump_retention:g} s); "
        "a message redriven there could expire before x-sump records it"
        for field, seconds in retention.items()
        if seconds > sump_retention
    ]
