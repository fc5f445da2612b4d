"""A `runtime: container` actor's settings (`actors.<name>.container`): the ECS service its image runs
in, checked against what Fargate and ECS accept field by field, so a size ECS would refuse at deploy
is named at load (`asya check`, `cdk synth`).

What cannot be checked offline is left to AWS and said so in docs/mesh.md: which GPU instance types a
region offers, and how many GPUs an instance type has (an instance type with fewer GPUs than `gpu`
never places a task; the service's events say so)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from asya.resiliency import Seconds

# Fargate's task sizes: vCPU → the memory (MiB) it may have (AWS's "Task CPU and memory"): a range in
# its steps, or for 0.25 vCPU three sizes (512, 1024, 2048: not 1536)
FARGATE_SIZES: dict[float, Sequence[int]] = {
    0.25: (512, 1024, 2048),
    0.5: range(1024, 4096 + 1, 1024),
    1: range(2048, 8192 + 1, 1024),
    2: range(4096, 16_384 + 1, 1024),
    4: range(8192, 30_720 + 1, 1024),
    8: range(16_384, 61_440 + 1, 4096),
    16: range(32_768, 122_880 + 1, 8192),
}
ECS_MAX_STOP_TIMEOUT = 120.0  # seconds between SIGTERM and SIGKILL a container may ask for on ECS
ECS_MAX_GPUS = 8  # the most GPUs one ECS task may reserve (the largest instances have 8)
# SQS keeps a received message hidden at most 12 hours from its receipt, however often its visibility is
# extended: the longest a container hop may run (`timeout`) and the longest visibility timeout
SQS_MAX_VISIBILITY = 12 * 3600.0
CONTAINER_MAX_TIMEOUT = SQS_MAX_VISIBILITY
ROOT_VOLUME_GB = 100  # a GPU instance's root volume: the images (a CUDA-sized one is 5-10 GB) and files
FARGATE_STORAGE_GIB = (20, 200)  # a Fargate task's ephemeral storage: 20 GiB unless set, 21-200 if set
GPU_INSTANCE_TYPE = "g5.xlarge"  # one NVIDIA A10G, 4 vCPU, 16 GiB: the smallest current GPU instance


class ContainerConfig(BaseModel):
    """How a container actor's tasks are sized, placed and scaled.

    `cpu` (vCPU) and `memory` (MiB) are the task's: on Fargate one of its sizes; with `gpu` (then on EC2
    instances of `instance_type`, ECS's GPU-optimized AMI) what the task reserves of the instance.
    `min`/`max` bound the tasks; with `min: 0` the service has no task while the queue is empty, and
    `messages_per_task` is the backlog (visible and in flight) one task is given before another starts.
    `concurrency`: hops one task runs at once. `stop_timeout`: the time ECS gives a task between SIGTERM
    and SIGKILL, to finish or release what it holds. `visibility`: the queue's visibility timeout, which
    the consumer's heartbeats keep extending while a hop runs, every third of it (a task that dies gives
    its messages back after it: a shorter one sooner, for a heartbeat more often; 10 s at least).
    `scale_in_cooldown`: how long after a scale-in the service waits before the next. `public_ip`: a
    Fargate task in a public subnet needs one to reach ECR, SQS and the rest (without NAT or VPC
    endpoints). `storage`: a Fargate task's ephemeral storage
    in GiB (21-200; 20 unless set), where the actor's `files` are fetched at its start."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu: float = Field(default=1, gt=0)
    memory: int = Field(default=2048, ge=512, le=122_880)
    gpu: int = Field(default=0, ge=0, le=ECS_MAX_GPUS)
    instance_type: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")] | None = None
    min: int = Field(default=0, ge=0, le=1000)
    max: int = Field(default=4, ge=1, le=1000)
    messages_per_task: int = Field(default=10, ge=1, le=100_000)
    concurrency: int = Field(default=1, ge=1, le=256)
    stop_timeout: Annotated[Seconds, Field(ge=2, le=ECS_MAX_STOP_TIMEOUT)] = 120.0
    visibility: Annotated[Seconds, Field(ge=10, le=SQS_MAX_VISIBILITY)] = 120.0
    scale_in_cooldown: Annotated[Seconds, Field(ge=60, le=86_400)] = 300.0
    public_ip: bool = False
    storage: int | None = Field(default=None, ge=FARGATE_STORAGE_GIB[0] + 1, le=FARGATE_STORAGE_GIB[1])

    @model_validator(mode="after")
    def _sizes_ecs_accepts(self) -> Self:
        if self.gpu == 0:
            if self.instance_type is not None:
                raise ValueError("instance_type: for GPU tasks on EC2 (gpu: 1 or more); a CPU task runs on Fargate")
            allowed = FARGATE_SIZES.get(self.cpu)
            if allowed is None:
                raise ValueError(f"cpu: {self.cpu:g} vCPU is not a Fargate size; one of {_listed(FARGATE_SIZES)}")
            if self.memory not in allowed:
                raise ValueError(
                    f"memory: {self.memory} MiB does not go with cpu {self.cpu:g} on Fargate: {_sizes(allowed)}"
                )
        if self.gpu and self.storage is not None:
            raise ValueError("storage: for Fargate tasks; a GPU task uses its instance's root volume")
        if self.gpu and self.public_ip:
            raise ValueError(
                "public_ip: a task on EC2 (gpu) gets no public IP; its subnets need a NAT gateway or endpoints"
            )
        if self.min > self.max:
            raise ValueError(f"min: {self.min} tasks is above max {self.max}")
        return self

    @property
    def cpu_units(self) -> int:
        """ECS's CPU units (1024 a vCPU)."""
        return math.ceil(self.cpu * 1024)

    @property
    def storage_gib(self) -> int:
        return self.storage or FARGATE_STORAGE_GIB[0]

    @property
    def gpu_instance_type(self) -> str:
        return self.instance_type or GPU_INSTANCE_TYPE


def _listed(sizes: dict[float, Sequence[int]]) -> str:
    return ", ".join(f"{cpu:g}" for cpu in sizes)


def _sizes(allowed: Sequence[int]) -> str:
    """The memory sizes one vCPU size allows, as the error names them."""
    if isinstance(allowed, range):
        return f"{allowed.start} to {allowed[-1]} MiB in steps of {allowed.step}"
    return f"{', '.join(map(str, allowed))} MiB"
