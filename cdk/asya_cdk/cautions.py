"""What a valid mesh file may still cost or break on AWS, said as warnings when `asya check` reads it:
settings that deploy, and work locally, but that an account shows at its first scale-out.

Unlike `asya_cdk.rules` (refused: AWS would refuse them or the mesh could never work), each of these
depends on what only the account or the traffic knows (routes in a VPC, an object's size, a branch's
payload), so the mesh file is told, not refused. Each warning is `<field>: <what may happen>; <what to do>`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from asya.gathering import completing_megabytes, widest_in_memory

if TYPE_CHECKING:
    from asya_cdk.actor_config import ActorConfig
    from asya_cdk.loaded_mesh import LoadedMesh

# Lambda's init phase: 10 s on demand; with provisioned concurrency 130 s or the function's timeout,
# whichever is higher (Lambda developer guide, "execution environment lifecycle").
INIT_SECONDS = 10.0
PROVISIONED_INIT_SECONDS = 130.0
INIT_SHARE = 0.8  # the share of the init a download may take: secrets, imports and the handler's class need the rest
DOWNLOAD_BYTES_PER_SECOND = 100 * 2**20  # an S3 download into /tmp from Lambda, roughly


def mesh_warnings(mesh: LoadedMesh) -> list[str]:
    """Every warning, each on its own, actor by actor."""
    warnings = []
    for name, actor in mesh.config.actors.items():
        warnings += vpc_warnings(name, actor, mesh.config.gateway.fly == "channel")
        if actor.runtime != "container":  # a task has no init phase to be cut off
            warnings += init_download_warnings(mesh, name)
        warnings += join_memory_warnings(name, actor, mesh.config.payloads.claim_check_bytes)
        warnings += gpu_warnings(name, actor)
    return warnings


def gpu_warnings(name: str, actor: ActorConfig) -> list[str]:
    """What no file can tell about a GPU actor: whether its instance type is offered in the stack's
    region, has as many GPUs as a task asks for, and fits the account's quota (new accounts often have
    0 vCPUs of G and VT instances). Said, so it is checked before the first envelope waits for it."""
    container = actor.container
    if container is None or not container.gpu:
        return []
    return [
        f"actors.{name}.container.instance_type: whether {container.gpu_instance_type} is offered in the stack's "
        f"region and has {container.gpu} GPU(s) for a task cannot be checked offline (aws ec2 "
        "describe-instance-types); one with fewer never places a task (the service's events say so), and the "
        "account's quota 'Running On-Demand G and VT instances' (vCPUs, often 0 in a new account) must allow "
        f"{container.max} of them"
    ]


def vpc_warnings(name: str, actor: ActorConfig, fly_channel: bool) -> list[str]:
    """A function or task in a VPC has no route to AWS services but those its subnets' endpoints or NAT
    give it: each endpoint this actor needs, named as the VPC console names it, so the network can be
    checked before the first envelope. `fly_channel`: the mesh publishes FLY events to its AppSync Event
    API (`gateway.fly: channel`), which no endpoint reaches (`fly_route`)."""
    if actor.vpc is None:
        return []
    task = actor.runtime == "container"
    gpu = actor.container is not None and actor.container.gpu > 0
    interface = ["sqs", "secretsmanager (the mesh's seal, and secrets)"]
    if any(reference.parameter is not None for reference in actor.secrets.values()):
        interface.append("ssm (secrets read from Parameter Store)")
    if task:  # the image is pulled and the logs sent from inside the VPC (Lambda does both itself)
        interface += ["ecr.api and ecr.dkr (its image)", "logs (its log lines)"]
        if gpu:  # the agent on its EC2 instances; Fargate's needs none
            interface.append("ecs, ecs-agent and ecs-telemetry (the ECS agent of its GPU instances)")
        if actor.tracing:  # a task has no X-Ray daemon: the sidecar calls PutTraceSegments itself
            interface.append("xray (its traces)")
    layers = ", its image's layers" if task else ""
    fargate = task and not gpu  # only a Fargate task may have a public IP
    internet = "a NAT gateway route" + (" (or, with public_ip, an internet gateway)" if fargate else "")
    return [
        f"actors.{name}.vpc: the {'task' if task else 'function'} reaches AWS only through its subnets' routes: "
        f"{internet} for all of them, or VPC endpoints (com.amazonaws.<region>.<name>): gateway endpoints s3 "
        f"(claim checks, files{layers}) and dynamodb, interface endpoints {', '.join(interface)}; kms only if "
        "the handler calls it; its security groups must allow outbound HTTPS (443); without them its start "
        f"fails, naming the service{fly_route(internet) if fly_channel else ''}"
    ]


def fly_route(internet: str) -> str:
    """FLY's fast lane publishes to the mesh's AppSync Event API, a public API: an AppSync interface
    endpoint (`appsync-api`) serves private APIs only, and with its private DNS on, calls to a public
    API's own domain go to it and are refused (AWS AppSync, "Using private APIs"). Only a route to the
    internet reaches it; without one the events are let go (FLY is ephemeral), each counted."""
    return (
        "; its FLY events go to the mesh's AppSync Event API, which is public: no VPC endpoint reaches it, "
        f"only {internet}; without one they are lost (StatusErrors counts them), or set gateway.fly: log"
    )


def init_download_warnings(mesh: LoadedMesh, name: str) -> list[str]:
    """An actor's files are fetched in Lambda's init phase: a download longer than the init is cut off
    and done again inside the first invocation, in every new execution environment (every scale-out),
    and since August 2025 the init phase is billed. Only local files' sizes are known here."""
    actor = mesh.config.actors[name]
    size = mesh.files_bytes(name)
    seconds = size / DOWNLOAD_BYTES_PER_SECOND
    provisioned = actor.provisioned_concurrency is not None
    limit = max(PROVISIONED_INIT_SECONDS, actor.lambda_timeout) if provisioned else INIT_SECONDS
    if seconds <= limit * INIT_SHARE:
        return []
    advice = (
        "bake them into a container image (package: image, the code folder) instead"
        if provisioned
        else "set provisioned_concurrency (its init may take 130 s) or bake them into a container image "
        "(package: image, the code folder)"
    )
    return [
        f"actors.{name}.files: about {math.ceil(size / 2**20):,} MB to fetch and unpack at every execution "
        f"environment's start, about {seconds:.0f} s at {DOWNLOAD_BYTES_PER_SECOND // 2**20} MB/s, past "
        f"{limit * INIT_SHARE:.0f} s of the {limit:.0f} s init; each new environment would be cut off and start "
        f"again inside its first invocation, billed both times; {advice}"
    ]


def join_memory_warnings(name: str, actor: ActorConfig, branch_bytes: int) -> list[str]:
    """The arrival that completes a join's widest fan holds every branch's payload at once. A branch's
    payload is taken to be as large as the mesh lets a payload travel inline (`claim_check_bytes`):
    larger ones are kept in S3 and restored too, so this is an assumption, not a bound."""
    if actor.join is None:
        return []
    width = actor.join_width
    needed = completing_megabytes(width, branch_bytes)
    memory = actor.container.memory if actor.container is not None else actor.memory
    if needed <= memory:
        return []
    fits = widest_in_memory(memory, branch_bytes)
    return [
        f"actors.{name}.join.max_width: the completing arrival of a fan of {width:,} branches of up to "
        f"{branch_bytes // 1024:,} KB each (payloads.claim_check_bytes) holds them all at once, about "
        f"{needed:,.0f} MB, more than its memory ({memory:,} MB); lower join.max_width (about "
        f"{fits:,} fit) or raise memory, or the join ends out of memory and its envelopes in x-sump"
    ]
